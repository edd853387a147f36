import {
  deepFreeze,
  type Episode,
  type JsonValue,
  type ModelRequest,
  type Msg,
  type ProfileFact,
  type Scope,
  type Sensitivity,
  trailJoin,
  trailKind,
  utf8Length,
} from "@alma-harness/core";
import { routeChild } from "./child.js";
import {
  type CompiledExtraction,
  type ExtractionOutcome,
  FACT_MAX_BYTES,
  SUMMARY_MAX_BYTES,
} from "./extraction-config.js";
import type { Ending } from "./limits.js";
import { transcriptOf } from "./long-context.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";

/** What the extraction reads of the turn: its model calls, whose it is, its view and ceiling. */
export interface ExtractionTurn {
  readonly calls: ModelCalls;
  readonly extraction: CompiledExtraction | undefined;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly history: readonly Msg[];
  readonly sensitivity: Sensitivity;
  readonly signal: AbortSignal;
}

/** Whether the turn's ending may be extracted: a completed turn that recorded its conversation. */
function extractable(state: TurnState, ending: Ending): boolean {
  return ending.terminalReason !== "error" && state.log.added.length > 0;
}

/**
 * The transcript the extraction reads, labelled as the rotation summary is (`transcriptOf`): the
 * rotation's summary when the turn rotated, the product-side events recorded since the previous
 * turn (and an undelivered mark), then the turn's own messages. Harness blocks (recall, the
 * volatile suffix, notices) are left out, so recalled text is never learned again as new.
 */
function extractionTranscript(
  turn: ExtractionTurn,
  state: TurnState,
): { readonly text: string; readonly undelivered: boolean } {
  const turnId = turn.calls.rec.turnId;
  const marker = state.log.added.filter((m) => m.meta?.rotation !== undefined);
  const own = state.log.added.filter(
    (m) => m.meta?.turn === turnId && m.meta.rotation === undefined,
  );
  const { history } = turn;
  // The recorded events at the end of the view (each carries its event id and no turn): older history is not this turn's.
  let since = history.length;
  while (since > 0 && isEvent(history[since - 1] as Msg)) since--;
  const events = history.slice(since);
  const undelivered = events.some((m) => m.meta?.event?.kind === "undelivered");
  return { text: bounded(transcriptOf([...marker, ...events, ...own])), undelivered };
}

const isEvent = (m: Msg) => m.meta?.event !== undefined && m.meta.turn === undefined;

/** The transcript's longest length (UTF-16 units): over it, whole lines are dropped from the start (the newest stay). */
export const EXTRACTION_TRANSCRIPT_MAX = 50_000;

function bounded(text: string): string {
  if (text.length <= EXTRACTION_TRANSCRIPT_MAX) return text;
  const cut = text.slice(text.length - EXTRACTION_TRANSCRIPT_MAX);
  const line = cut.indexOf("\n");
  return line < 0 ? cut : cut.slice(line + 1);
}

/**
 * Runs the extraction when it is configured and the turn may be extracted. Never throws: every
 * failure is an outcome on the lifecycle trail (best effort: a trail that cannot be written is
 * swallowed here), and the turn's ending stands.
 */
export async function extractMemory(
  turn: ExtractionTurn,
  state: TurnState,
  ending: Ending,
): Promise<void> {
  const { extraction } = turn;
  if (!extraction || !extractable(state, ending)) return;
  let outcome: ExtractionOutcome;
  // Counted as they land: a store failure midway still reports what was written.
  const written = { episodes: 0, facts: 0 };
  try {
    outcome = await extract(turn, state, extraction, written);
  } catch {
    outcome = "failed";
  }
  try {
    const detail = trailJoin(trailKind(outcome), written.episodes, written.facts);
    await turn.calls.rec.record("lifecycle", { action: "memory.extraction", detail });
  } catch {
    // The extraction's own record is best effort: it never changes the turn's outcome.
  }
}

interface Extracted {
  readonly episode: string | null;
  readonly facts: readonly {
    readonly key: string;
    readonly text: string;
    readonly confidence: number;
  }[];
}

interface Written {
  episodes: number;
  facts: number;
}

async function extract(
  turn: ExtractionTurn,
  state: TurnState,
  extraction: CompiledExtraction,
  written: Written,
): Promise<ExtractionOutcome> {
  const { calls, sensitivity } = turn;
  if (state.callsUsed >= calls.limits.maxCalls) return "no_call";
  const { text, undelivered } = extractionTranscript(turn, state);
  if (text.length === 0) return "nothing";
  const choice = routeChild(calls, { tier: extraction.tier, sensitivity }, "extraction");
  const request = deepFreeze<ModelRequest>({
    model: choice.model,
    system: [{ type: "text", text: extraction.instruction }],
    messages: [{ role: "user", blocks: [{ type: "text", text }] }],
    tools: [],
    output: { name: "memory_extraction", schema: extraction.schema.schema },
    maxOutputTokens: choice.maxOutputTokens,
    ...(choice.cache !== false ? { cache: { ttl: choice.cache.ttl } } : {}),
    ...(choice.serviceTier ? { serviceTier: choice.serviceTier } : {}),
  });
  const result = await calls.round(
    { kind: "extraction", step: state.steps, choice, request, tier: extraction.tier, sensitivity },
    turn.signal,
  );
  if (result.status === "refused") return "refused";
  if (result.status === "rejected") return "failed";
  const { output } = result.done;
  const parsed =
    output.stopReason === "end_turn" || output.stopReason === "stop_sequence"
      ? parseExtraction(extraction, output.text)
      : undefined;
  if (parsed === undefined || output.toolCalls.length > 0) return "invalid";
  await write(turn, extraction, parsed, undelivered, written);
  return written.episodes + written.facts > 0 ? "stored" : "nothing";
}

/** The answer as the schema allows it, or nothing: not JSON, off the schema, or over a byte bound. */
export function parseExtraction(
  extraction: Pick<CompiledExtraction, "schema">,
  text: string,
): Extracted | undefined {
  let value: JsonValue;
  try {
    value = JSON.parse(text) as JsonValue;
  } catch {
    return undefined;
  }
  if (extraction.schema.check(value) !== undefined) return undefined;
  const out = value as unknown as Extracted;
  if (
    out.episode !== null &&
    (utf8Length(out.episode) > SUMMARY_MAX_BYTES || out.episode.trim().length === 0)
  )
    return undefined;
  if (out.facts.some((f) => utf8Length(f.text) > FACT_MAX_BYTES || f.text.trim().length === 0))
    return undefined;
  if (new Set(out.facts.map((f) => f.key)).size !== out.facts.length) return undefined;
  return out;
}

/** Writes the episode, then the facts, each with the turn as its source and the turn's sensitivity. */
async function write(
  turn: ExtractionTurn,
  extraction: CompiledExtraction,
  parsed: Extracted,
  undelivered: boolean,
  written: Written,
): Promise<void> {
  const { rec } = turn.calls;
  const { turnId } = rec;
  const source = Object.freeze({ sessionId: turn.sessionId, turnId, at: rec.now() });
  const { sensitivity, scope } = turn;
  // Stable ids: the same turn extracted again replays instead of writing twice.
  const base = turnId.length <= 100 ? turnId : rec.trail.hash(turnId);
  if (parsed.episode !== null) {
    const episode: Episode = {
      scope,
      episodeId: `ep:${base}`,
      source,
      sensitivity,
      summary: parsed.episode.trim(),
      ...(undelivered ? { undelivered: true as const } : {}),
    };
    await extraction.stores.episodes.put(episode);
    written.episodes = 1;
  }
  for (const [i, f] of parsed.facts.entries()) {
    const fact: ProfileFact = {
      scope,
      factId: `pf:${base}:${i}`,
      key: f.key,
      text: f.text.trim(),
      source,
      sensitivity,
      confidence: f.confidence,
    };
    await extraction.stores.profiles.put(fact);
    written.facts += 1;
  }
}
