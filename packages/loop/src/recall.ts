import {
  type Block,
  type Clock,
  type Episode,
  type ProfileFact,
  RECALL_DEGRADED_TIERS,
  type RecallDegradedTier,
  type RecallResult,
  type RecallSource,
  type Scope,
  type Sensitivity,
  sensitivityRank,
  trailId,
} from "@alma-harness/core";
import { estimateTokens } from "@alma-harness/memory/context";
import { abortReason, startTimer } from "./cancel.js";
import { EngineConfigError } from "./errors.js";
import type { Recorder } from "./recorder.js";

/**
 * Recall (seed 000 `recall.ts`, issue 18): before a turn's first step, what the turn may see from
 * memory, read once through a `RecallSource` and rendered as one harness block after the cached
 * prefix. Only the main thread recalls: a delegate's request is written by its parent's handler
 * and never gets recalled text (decided: "not at all", so a delegate's ceiling is never crossed).
 */
export interface RecallConfig {
  readonly source: RecallSource;
  /** Episodes per turn, 0–50; default 3. */
  readonly episodes?: number;
  /** Profile facts per turn, 0–50; default 8. */
  readonly facts?: number;
  /** The one deadline of a turn's recall, every attempt included: 1 ms – 60 s; default 2 s. */
  readonly recallTimeoutMs?: number;
  /** Calls to a source that rejects, within `recallTimeoutMs`: 1–5; default 3. */
  readonly attempts?: number;
  /** The rendered block's characters at most (whole records are dropped to fit): 200–20,000; default 4,000. */
  readonly maxChars?: number;
  /** The first line of the block (1–500 characters, no control characters); default `RECALL_LABEL`. */
  readonly label?: string;
}

export const RECALL_LABEL =
  "[Recalled memory: what is known about this person from earlier sessions. It was not said in this turn; the person's own words take precedence.]";
export const DEFAULT_RECALL = Object.freeze({
  episodes: 3,
  facts: 8,
  recallTimeoutMs: 2_000,
  attempts: 3,
  maxChars: 4_000,
});
/** The query text recall ranks by: the turn's input text, at most this many UTF-16 units. */
export const RECALL_QUERY_MAX = 4_000;
const SOURCE_NAME = /^[a-z0-9_.:-]{1,64}$/;

export interface CompiledRecall {
  readonly source: RecallSource;
  readonly name: ReturnType<typeof trailId>;
  readonly episodes: number;
  readonly facts: number;
  readonly recallTimeoutMs: number;
  readonly attempts: number;
  readonly maxChars: number;
  readonly label: string;
}

function hasControl(text: string): boolean {
  for (let i = 0; i < text.length; i++)
    if (text.charCodeAt(i) < 0x20 || text.charCodeAt(i) === 0x7f) return true;
  return false;
}

function int(name: string, value: unknown, min: number, max: number, def: number): number {
  if (value === undefined) return def;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max)
    throw new EngineConfigError(`recall.${name} must be an integer ${min}-${max}`);
  return value as number;
}

/** Validates the recall configuration once, at construction. */
export function compileRecall(config: RecallConfig | undefined): CompiledRecall | undefined {
  if (config === undefined) return undefined;
  if (config === null || typeof config !== "object")
    throw new EngineConfigError("recall must be an object { source, ... }");
  const source = config.source;
  if (!source || typeof source.recall !== "function")
    throw new EngineConfigError("recall.source must be a RecallSource");
  if (typeof source.name !== "string" || !SOURCE_NAME.test(source.name))
    throw new EngineConfigError("recall.source.name must be 1-64 of [a-z0-9_.:-]");
  const label = config.label ?? RECALL_LABEL;
  if (typeof label !== "string" || label.length < 1 || label.length > 500 || hasControl(label)) {
    throw new EngineConfigError("recall.label must be 1-500 characters without control characters");
  }
  const maxChars = int("maxChars", config.maxChars, 200, 20_000, DEFAULT_RECALL.maxChars);
  if (label.length >= maxChars)
    throw new EngineConfigError("recall.label must be shorter than recall.maxChars");
  return Object.freeze({
    source,
    name: trailId(source.name),
    episodes: int("episodes", config.episodes, 0, 50, DEFAULT_RECALL.episodes),
    facts: int("facts", config.facts, 0, 50, DEFAULT_RECALL.facts),
    recallTimeoutMs: int(
      "recallTimeoutMs",
      config.recallTimeoutMs,
      1,
      60_000,
      DEFAULT_RECALL.recallTimeoutMs,
    ),
    attempts: int("attempts", config.attempts, 1, 5, DEFAULT_RECALL.attempts),
    maxChars,
    label,
  });
}

/** What a turn's recall gave: the block's text (absent when nothing was recalled) and its trail counts. */
interface Recalled {
  readonly text: string | undefined;
  readonly episodes: number;
  readonly facts: number;
  readonly attempts: number;
  readonly dropped: number;
  readonly degraded: ReadonlySet<RecallDegradedTier>;
}

/** What recall reads of the turn: whose it is, its input, its ceiling, its clock and signal. */
export interface RecallTurn {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly input: readonly Block[];
  /** The turn's sensitivity: the ceiling of what recall may bring in. */
  readonly sensitivity: Sensitivity;
  readonly clock: Clock;
  readonly signal: AbortSignal;
}

/**
 * The turn's recall: the source asked (again while it rejects) under one timer of
 * `recallTimeoutMs`, what it gave checked and bounded, the block rendered, the recall trail
 * written. A source that keeps failing, hangs or answers nonsense degrades recall, never the turn;
 * the turn's cancellation or deadline throws (the turn is uncertain) with the timer cleared.
 */
export async function recallFor(
  recall: CompiledRecall | undefined,
  rec: Recorder,
  turn: RecallTurn,
): Promise<string | undefined> {
  if (!recall) return undefined;
  const ceiling = turn.sensitivity;
  await rec.commit();
  const asked = await askSource(turn, recall);
  const recalled =
    asked.result === undefined
      ? emptyRecall(asked.attempts, asked.tier)
      : boundRecall(recall, asked.result, turn.scope, ceiling, asked.attempts);
  const text = recalled.text ?? "";
  const degradedTiers = RECALL_DEGRADED_TIERS.filter((t) => recalled.degraded.has(t));
  await rec.record("recall", {
    source: recall.name,
    items: recalled.episodes + recalled.facts,
    episodes: recalled.episodes,
    facts: recalled.facts,
    characters: text.length,
    estimatedTokens: text.length === 0 ? 0 : estimateTokens(text),
    attempts: recalled.attempts,
    dropped: recalled.dropped,
    ...(degradedTiers.length > 0 ? { degradedTiers } : {}),
  });
  return recalled.text;
}

function emptyRecall(attempts: number, tier: RecallDegradedTier | undefined): Recalled {
  return {
    text: undefined,
    episodes: 0,
    facts: 0,
    attempts,
    dropped: 0,
    degraded: new Set(tier ? [tier] : []),
  };
}

type Asked =
  | { readonly result: RecallResult; readonly attempts: number; readonly tier?: undefined }
  | { readonly result: undefined; readonly attempts: number; readonly tier: RecallDegradedTier };

/**
 * The source under one deadline. Each attempt gets a signal that aborts at the deadline or the
 * turn's end; the race never waits for a source that ignores it, and whatever a source answers
 * after the race is over is dropped (a late result can neither append nor dispatch).
 */
async function askSource(turn: RecallTurn, recall: CompiledRecall): Promise<Asked> {
  const { signal } = turn;
  const control = new AbortController();
  let timedOut = false;
  let wake: (() => void) | undefined;
  const expired = new Promise<"timeout">((resolve) => {
    wake = () => resolve("timeout");
  });
  const stopTimer = startTimer(turn.clock, recall.recallTimeoutMs, () => {
    timedOut = true;
    control.abort(new Error("recall timed out"));
    wake?.();
  });
  const cancelled = new Promise<never>((_, reject) => {
    const onAbort = () => reject(abortReason(signal));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    control.signal.addEventListener("abort", () => signal.removeEventListener("abort", onAbort), {
      once: true,
    });
  });
  cancelled.catch(() => undefined);
  const query = Object.freeze({
    scope: turn.scope,
    sessionId: turn.sessionId,
    text: queryText(turn.input),
    ceiling: turn.sensitivity,
    limits: Object.freeze({ episodes: recall.episodes, facts: recall.facts }),
    signal: control.signal,
  });
  let attempts = 0;
  try {
    while (attempts < recall.attempts && !timedOut) {
      attempts += 1;
      const call = callSource(recall.source, query);
      const answer = await Promise.race([call, expired, cancelled]);
      if (answer === "timeout") return { result: undefined, attempts, tier: "unavailable" };
      if (answer.ok)
        return answer.value === undefined
          ? { result: undefined, attempts, tier: "invalid" }
          : { result: answer.value, attempts };
    }
    return { result: undefined, attempts, tier: "unavailable" };
  } finally {
    // Cleared on every exit, cancellation included, even when the source never settles.
    stopTimer();
    if (!control.signal.aborted) control.abort(new Error("recall is over"));
  }
}

/** One call to the source, never throwing: a synchronous throw is a rejection, a malformed answer is `undefined`. */
async function callSource(
  source: RecallSource,
  query: Parameters<RecallSource["recall"]>[0],
): Promise<
  { readonly ok: true; readonly value: RecallResult | undefined } | { readonly ok: false }
> {
  try {
    const value: unknown = await source.recall(query);
    return { ok: true, value: isRecallResult(value) ? value : undefined };
  } catch {
    return { ok: false };
  }
}

function isRecallResult(value: unknown): value is RecallResult {
  if (value === null || typeof value !== "object") return false;
  const r = value as { episodes?: unknown; facts?: unknown };
  return Array.isArray(r.episodes) && Array.isArray(r.facts);
}

/** The words recall ranks by: the input's own text blocks (never a harness block), bounded. */
function queryText(input: readonly Block[]): string {
  const words = input
    .map((b) => (b.type === "text" && b.origin !== "harness" ? b.text : ""))
    .filter((t) => t.length > 0)
    .join("\n");
  return words.length > RECALL_QUERY_MAX ? words.slice(0, RECALL_QUERY_MAX) : words;
}

/** The latest time a `Date` can show (epoch ms): a record's `source.at` beyond it is not a time. */
const MAX_TIME = 8.64e15;
/** At most this many records of each kind are looked at, whatever a source returns (the bounds are at most 50). */
const CONSIDERED = 200;
/** A fact's slot (core's `ProfileFact.key` rule): a key of another shape could add a line of its own. */
const FACT_KEY = /^[a-z][a-z0-9_.-]{0,63}$/;

const sameScope = (a: Scope, b: Scope) =>
  a !== null && typeof a === "object" && a.org === b.org && a.uid === b.uid;

/** A record the turn may see: of its scope, at or below its ceiling, with text of the contract's shape. */
function admissible(
  record: unknown,
  scope: Scope,
  ceiling: Sensitivity,
  text: (r: never) => unknown,
): boolean {
  if (record === null || typeof record !== "object") return false;
  const r = record as { scope?: Scope; sensitivity?: Sensitivity; source?: { at?: unknown } };
  if (!r.scope || !sameScope(r.scope, scope)) return false;
  let rank: number;
  try {
    rank = sensitivityRank(r.sensitivity as Sensitivity);
  } catch {
    return false;
  }
  if (!(rank <= sensitivityRank(ceiling))) return false;
  const body = text(record as never);
  const at = r.source?.at;
  return (
    typeof body === "string" &&
    body.length > 0 &&
    Number.isSafeInteger(at) &&
    (at as number) >= 0 &&
    (at as number) <= MAX_TIME
  );
}

/** The source's answer kept to the turn's scope, ceiling and bounds, then rendered. */
function boundRecall(
  recall: CompiledRecall,
  result: RecallResult,
  scope: Scope,
  ceiling: Sensitivity,
  attempts: number,
): Recalled {
  const degraded = new Set<RecallDegradedTier>();
  const rawFacts = result.facts.slice(0, CONSIDERED);
  const rawEpisodes = result.episodes.slice(0, CONSIDERED);
  const facts = rawFacts.filter(
    (f) =>
      admissible(f, scope, ceiling, (r: ProfileFact) => r.text) &&
      typeof f.key === "string" &&
      FACT_KEY.test(f.key),
  );
  const episodes = rawEpisodes.filter((e) =>
    admissible(e, scope, ceiling, (r: Episode) => r.summary),
  );
  let dropped = rawFacts.length - facts.length + (rawEpisodes.length - episodes.length);
  if (dropped > 0) degraded.add("filtered");
  const unseen =
    result.facts.length - rawFacts.length + (result.episodes.length - rawEpisodes.length);
  if (unseen > 0) degraded.add("truncated");
  dropped += unseen;
  // Bounded in the source's rank order, then ordered for the block.
  const keptFacts = sortFacts(facts.slice(0, recall.facts));
  const keptEpisodes = sortEpisodes(episodes.slice(0, recall.episodes));
  const rendered = renderRecall(recall, keptFacts, keptEpisodes);
  const over =
    facts.length - keptFacts.length + (episodes.length - keptEpisodes.length) + rendered.dropped;
  if (over > 0) degraded.add("truncated");
  dropped += over;
  return {
    text: rendered.text,
    episodes: rendered.episodes,
    facts: rendered.facts,
    attempts,
    dropped,
    degraded,
  };
}

/** Facts in a fixed order (key, then newest first, then id), so the block does not depend on the source's ranking order. */
function sortFacts(facts: readonly ProfileFact[]): ProfileFact[] {
  return [...facts].sort(
    (a, b) => cmp(a.key, b.key) || b.source.at - a.source.at || cmp(a.factId, b.factId),
  );
}

/** Episodes newest first, then by id. */
function sortEpisodes(episodes: readonly Episode[]): Episode[] {
  return [...episodes].sort(
    (a, b) => b.source.at - a.source.at || cmp(String(a.episodeId), String(b.episodeId)),
  );
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const day = (at: number) => new Date(at).toISOString().slice(0, 10);
/** One line per record: no record can add a line of its own (line breaks become spaces). */
const oneLine = (text: string) => text.replace(/[\r\n\u2028\u2029]+/g, " ").trim();

/**
 * The block, deterministic for the same records: the label, then `Facts:` (one line each: key,
 * the day it was learned, the text), then `Earlier sessions:` (day, summary, and a note when the
 * reply was never delivered). Records that would take it over `maxChars` are dropped whole, facts
 * before episodes keep their places (a fact outranks a summary).
 */
export function renderRecall(
  recall: Pick<CompiledRecall, "label" | "maxChars">,
  facts: readonly ProfileFact[],
  episodes: readonly Episode[],
) {
  let text = recall.label;
  let keptFacts = 0;
  let keptEpisodes = 0;
  let dropped = 0;
  const add = (heading: string, lines: readonly string[]): number => {
    let kept = 0;
    for (const line of lines) {
      const next = `${text}${kept === 0 ? `\n${heading}` : ""}\n${line}`;
      if (next.length > recall.maxChars) {
        dropped++;
        continue;
      }
      text = next;
      kept++;
    }
    return kept;
  };
  keptFacts = add(
    "Facts:",
    facts.map((f) => `- ${f.key} (${day(f.source.at)}): ${oneLine(f.text)}`),
  );
  keptEpisodes = add(
    "Earlier sessions:",
    episodes.map(
      (e) =>
        `- ${day(e.source.at)}: ${oneLine(e.summary)}${e.undelivered ? " (the reply of that session was not delivered)" : ""}`,
    ),
  );
  return {
    text: keptFacts + keptEpisodes > 0 ? text : undefined,
    facts: keptFacts,
    episodes: keptEpisodes,
    dropped,
  };
}
