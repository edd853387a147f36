import { type Msg, ValidationError } from "@alma-harness/core";
import { estimateMessagesTokens } from "./estimate.js";

/** What a consumer keys off: every trim marker's text starts with it. */
export const TRIMMED_MARKER_PREFIX = "[context-trimmed]";

/** What one trim pass did. */
export interface TrimOutcome {
  /** Messages removed from the front (0: nothing was trimmed). */
  readonly removedMessages: number;
  /** Their estimated tokens. */
  readonly removedTokens: number;
  readonly trimmed: boolean;
}

/** The history to send, and what the pass did. */
export interface TrimResult {
  readonly messages: readonly Msg[];
  readonly outcome: TrimOutcome;
}

const UNTRIMMED: TrimOutcome = Object.freeze({
  removedMessages: 0,
  removedTokens: 0,
  trimmed: false,
});

/**
 * The one message that tells the model earlier history was dropped: a harness notice on the
 * person's side (Alma has no system role in the session), naming how many messages and about how
 * many tokens went, so it can ask for a detail again instead of silently missing it.
 */
export function trimmedMarkerMessage(removedMessages: number, removedTokens: number): Msg {
  const text = `${TRIMMED_MARKER_PREFIX} Earlier conversation was trimmed to fit the context budget: ${count("removedMessages", removedMessages)} message(s), ~${count("removedTokens", removedTokens)} tokens removed. Continue from the recent messages below and ask for any earlier detail you need.`;
  return Object.freeze({
    role: "user",
    blocks: Object.freeze([Object.freeze({ type: "text", text, origin: "harness" })]),
  });
}

function count(path: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw new ValidationError(path, "a non-negative integer");
  return value;
}

/**
 * Where a kept suffix may start without breaking the tool protocol: a message of the person's side
 * that answers no tool call, so no assistant tool call loses its result and the history never
 * starts with an orphan result.
 */
function cutPoints(messages: readonly Msg[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < messages.length; i++) {
    const m = messages[i] as Msg;
    if (m.role === "user" && !m.blocks.some((b) => b.type === "tool_result")) out.push(i);
  }
  return out;
}

/**
 * Trims an over-budget history to fit `windowTokens × threshold` (pure and deterministic; the
 * input is never changed). `systemTokens` (the system prompt, never trimmed) counts into the
 * budget. `windowTokens` 0 disables trimming. Over budget, the cut keeps the `keepRecent` most
 * recent messages where a protocol-safe cut allows it, cuts further when that suffix still does
 * not fit (the longest suffix that fits), and when nothing fits keeps what follows the last safe
 * cut; with no safe cut the history is returned whole. The removal is marked by one
 * `trimmedMarkerMessage` in front of what is kept.
 */
export function trimContext(
  messages: readonly Msg[],
  systemTokens: number,
  windowTokens: number,
  threshold: number,
  keepRecent: number,
): TrimResult {
  if (!Array.isArray(messages)) throw new ValidationError("messages", "an array of messages");
  count("systemTokens", systemTokens);
  count("windowTokens", windowTokens);
  count("keepRecent", keepRecent);
  if (typeof threshold !== "number" || !(threshold > 0 && threshold <= 1))
    throw new ValidationError("threshold", "a number above 0, at most 1");
  const whole = Object.freeze([...messages]);
  if (windowTokens === 0) return { messages: whole, outcome: UNTRIMMED };
  const budget = Math.max(1, Math.floor(windowTokens * threshold));
  if (systemTokens + estimateMessagesTokens(messages) <= budget)
    return { messages: whole, outcome: UNTRIMMED };
  const cuts = cutPoints(messages);
  if (cuts.length === 0) return { messages: whole, outcome: UNTRIMMED };
  const keepFrom = messages.length - Math.max(1, keepRecent);
  const withinKeep = cuts.find((c) => c >= keepFrom);
  const fitting = cuts.find(
    (c) => systemTokens + estimateMessagesTokens(messages.slice(c)) <= budget,
  );
  // Nothing fits: the shortest protocol-safe suffix (what follows the last safe cut).
  const cut = fitting === undefined ? (cuts.at(-1) as number) : Math.max(withinKeep ?? 0, fitting);
  const removed = messages.slice(0, cut);
  const outcome: TrimOutcome = Object.freeze({
    removedMessages: removed.length,
    removedTokens: estimateMessagesTokens(removed),
    trimmed: true,
  });
  return {
    messages: Object.freeze([
      trimmedMarkerMessage(outcome.removedMessages, outcome.removedTokens),
      ...messages.slice(cut),
    ]),
    outcome,
  };
}
