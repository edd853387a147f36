import { type Block, isTier, type JsonValue, type Msg, type Tier } from "@alma-harness/core";
import type { LongContextPolicy } from "./engine.js";
import { EngineConfigError } from "./errors.js";

/** A session is cold when its newest recorded message is older than this, by default (five minutes). */
export const DEFAULT_COLD_AFTER_MS = 5 * 60_000;

/** The lines around a summary in the persisted marker. */
export const DEFAULT_SUMMARY_FRAME: { readonly before: string; readonly after: string } =
  Object.freeze({
    before: "Summary of the earlier conversation:",
    after: "The conversation continues below.",
  });

/** What the summary call is asked to do (its system prompt). */
export const SUMMARY_INSTRUCTION =
  "You summarize a conversation for the assistant who will continue it. Keep what the person asked for, names, dates, " +
  "numbers, decisions, commitments, tool findings and open questions; drop pleasantries. Write plain prose, with no preamble.";

export interface CompiledLongContext {
  readonly rotateAtTokens: number;
  readonly keepLastMessages: number;
  readonly coldAfterMs: number;
  readonly summaryTier: Tier;
  readonly frame: { readonly before: string; readonly after: string };
  readonly estimateTokens: ((text: string) => number) | undefined;
  /** `speechTools`: tool name → the argument that holds what it says to the person. */
  readonly speech: ReadonlyMap<string, string>;
}

/** At most this many speech tools; a tool name and an argument name as the registry spells them. */
const MAX_SPEECH_TOOLS = 64;
const NAME = /^[A-Za-z0-9_-]{1,128}$/;
const NO_SPEECH: ReadonlyMap<string, string> = new Map();

function speechOf(value: unknown): ReadonlyMap<string, string> {
  if (value === undefined) return NO_SPEECH;
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new EngineConfigError("longContext.speechTools must be {toolName: argumentName}");
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_SPEECH_TOOLS)
    throw new EngineConfigError(
      `longContext.speechTools names at most ${MAX_SPEECH_TOOLS} tools (${entries.length} given)`,
    );
  for (const [tool, argument] of entries) {
    if (!NAME.test(tool))
      throw new EngineConfigError(
        "longContext.speechTools: a tool name is 1-128 of A-Z a-z 0-9 _ -",
      );
    if (typeof argument !== "string" || !NAME.test(argument))
      throw new EngineConfigError(
        `longContext.speechTools.${tool} must name its argument (1-128 of A-Z a-z 0-9 _ -)`,
      );
  }
  return new Map(entries as [string, string][]);
}

function integer(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new EngineConfigError(`longContext.${name} must be an integer ${min}-${max}`);
  }
  return value;
}

function frameOf(frame: unknown): { readonly before: string; readonly after: string } {
  if (frame === undefined) return DEFAULT_SUMMARY_FRAME;
  const f = frame as Record<string, unknown> | null;
  if (
    f === null ||
    typeof f !== "object" ||
    Object.keys(f).some((k) => k !== "before" && k !== "after")
  ) {
    throw new EngineConfigError("longContext.summaryFrame must be {before, after}");
  }
  for (const key of ["before", "after"]) {
    const v = f[key];
    if (typeof v !== "string" || v.length > 1000)
      throw new EngineConfigError(
        `longContext.summaryFrame.${key} must be a string of at most 1,000 characters`,
      );
  }
  return Object.freeze({ before: f.before as string, after: f.after as string });
}

const POLICY_FIELDS = new Set([
  "rotateAtTokens",
  "keepLastMessages",
  "coldAfterMs",
  "summaryTier",
  "summaryFrame",
  "estimateTokens",
  "speechTools",
]);

/** Validates and copies the policy once, at construction; absent means no rotation at all. */
export function resolveLongContext(
  policy: LongContextPolicy | undefined,
): CompiledLongContext | undefined {
  if (policy === undefined) return undefined;
  if (policy === null || typeof policy !== "object")
    throw new EngineConfigError("longContext must be an object");
  for (const key of Object.keys(policy))
    if (!POLICY_FIELDS.has(key)) throw new EngineConfigError(`longContext.${key} is not a field`);
  if (!isTier(policy.summaryTier))
    throw new EngineConfigError("longContext.summaryTier must be a tier");
  if (policy.estimateTokens !== undefined && typeof policy.estimateTokens !== "function")
    throw new EngineConfigError("longContext.estimateTokens must be a function");
  return Object.freeze({
    rotateAtTokens: integer("rotateAtTokens", policy.rotateAtTokens, 1, 100_000_000),
    keepLastMessages: integer("keepLastMessages", policy.keepLastMessages, 0, 10_000),
    coldAfterMs: integer(
      "coldAfterMs",
      policy.coldAfterMs ?? DEFAULT_COLD_AFTER_MS,
      0,
      365 * 86_400_000,
    ),
    summaryTier: policy.summaryTier,
    frame: frameOf(policy.summaryFrame),
    estimateTokens: policy.estimateTokens,
    speech: speechOf(policy.speechTools),
  });
}

/** The values of a JSON document, never its keys. */
function valuesOf(value: JsonValue, out: string[]): void {
  if (value === null) return;
  if (typeof value === "string") out.push(value);
  else if (typeof value === "number" || typeof value === "boolean") out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) valuesOf(v, out);
  else for (const v of Object.values(value)) valuesOf(v as JsonValue, out);
}

function blockContent(block: Block, out: string[]): void {
  switch (block.type) {
    case "text":
      out.push(block.text);
      return;
    case "tool_call":
      out.push(block.name);
      valuesOf(block.input, out);
      return;
    case "tool_result":
      out.push(block.name);
      valuesOf(block.output, out);
      return;
    case "provider_tool_call":
    case "provider_tool_result":
      // The payload is opaque: only the name is content.
      out.push(block.name);
      return;
    default:
      // Media and reasoning are not measured.
      return;
  }
}

/**
 * The text `rotateAtTokens` is measured on: each message's role, its text, its tool calls (name and
 * argument values) and results (name and output values), joined by newlines. Never meta, JSON
 * keys, opaque provider payloads, reasoning or media.
 */
export function measuredText(messages: readonly Msg[]): string {
  const out: string[] = [];
  for (const msg of messages) {
    out.push(msg.role);
    for (const block of msg.blocks) blockContent(block, out);
  }
  return out.join("\n");
}

/** Tokens of the history: the host's `estimateTokens` on the measured text, else `ceil(characters / 4)`. */
export function measureTokens(policy: CompiledLongContext, messages: readonly Msg[]): number {
  const text = measuredText(messages);
  if (!policy.estimateTokens) return Math.ceil(text.length / 4);
  const n = policy.estimateTokens(text);
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0)
    throw new TypeError("estimateTokens must return a finite non-negative number");
  return n;
}

/**
 * Whether the session is cold at `now`: its newest message carrying `meta.at` is older than
 * `coldAfterMs` (exactly `coldAfterMs` is still warm). A view with no timed message is cold.
 */
export function isCold(
  policy: CompiledLongContext,
  messages: readonly Msg[],
  now: number,
): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const at = messages[i]?.meta?.at;
    if (typeof at === "number") return now - at > policy.coldAfterMs;
  }
  return true;
}

/** A message a kept tail may start at: the person's side, never a tool result (its call would be gone). */
function startsTail(msg: Msg): boolean {
  return msg.role === "user" && !msg.blocks.some((b) => b.type === "tool_result");
}

/**
 * Where the kept tail starts: the first of the last `keep` messages that can start it, moving
 * forward; the tail is empty when none can. Undefined when nothing would be summarized (no
 * removable head): the whole history is the tail.
 */
export function tailStart(messages: readonly Msg[], keep: number): number | undefined {
  let start = Math.max(0, messages.length - keep);
  while (start < messages.length && !startsTail(messages[start] as Msg)) start++;
  return start === 0 ? undefined : start;
}

function json(value: JsonValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/**
 * One transcript line per block a summary reads; the volatile suffix and notices are left out. A
 * call of a speech tool (`speech`) is read as what the assistant said to the person, whole.
 */
function linesOf(msg: Msg, out: string[], speech: ReadonlyMap<string, string>): void {
  if (msg.meta?.rotation !== undefined) {
    out.push(
      `Earlier summary: ${msg.blocks.map((b) => (b.type === "text" ? b.text : "")).join("")}`,
    );
    return;
  }
  if (msg.meta?.event?.kind === "undelivered") {
    out.push("(The person did not receive the assistant's previous reply.)");
    return;
  }
  const speaker = msg.role === "user" ? "Person" : "Assistant";
  for (const b of msg.blocks) {
    if (b.type === "text") {
      if (b.origin === "harness") continue;
      // A product-side fact arrives rendered with its label: it is read as such, not as the person's words.
      out.push(b.origin === "human" || b.origin === "system" ? b.text : `${speaker}: ${b.text}`);
    } else if (b.type === "tool_call") {
      const argument = speech.get(b.name);
      const said = argument === undefined ? undefined : b.input[argument];
      out.push(
        typeof said === "string"
          ? `Assistant (to the person, through ${b.name}): ${said}`
          : `Assistant called ${b.name} with ${JSON.stringify(b.input)}`,
      );
    } else if (b.type === "tool_result")
      out.push(`Result of ${b.name}${b.isError ? " (error)" : ""}: ${json(b.output)}`);
    else if (b.type === "provider_tool_result")
      out.push(`Assistant searched the web (${b.resultCount} results)`);
    else if (b.type === "media") out.push(`${speaker} shared a ${b.kind} (${b.contentType})`);
  }
}

/** The transcript the summary call reads: labelled lines, in log order. */
export function transcriptOf(
  messages: readonly Msg[],
  speech: ReadonlyMap<string, string> = NO_SPEECH,
): string {
  const out: string[] = [];
  for (const msg of messages) linesOf(msg, out, speech);
  return out.join("\n");
}
