import { type ModelChoice, ScopeFencedError } from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";
import type {
  Continuation,
  ContinuationCall,
  ContinuationNext,
  ContinuationWriter,
} from "./continuation.js";
import { CONTINUATION_VERSION } from "./continuation.js";
import type { TurnEnv } from "./env.js";
import type { Ending } from "./limits.js";
import type { Next, RunTools } from "./next.js";
import { modelStage } from "./model-stage.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";
import { toolStage } from "./tool-step.js";

/** How the driver stops: the turn's ending, or parked on a person's decision. */
export type Driven =
  | { readonly kind: "ended"; readonly ending: Ending }
  | { readonly kind: "parked"; readonly continuation: Continuation };

/**
 * Runs the turn's steps from `first` to its ending or to a park. After each stage, at the step
 * boundary, the turn's continuation is handed to the engine's writer when one is configured (none:
 * nothing is built); a writer that fails makes the turn uncertain (cause `continuation`). A park
 * always builds it: it is what the turn resumes from.
 */
export async function drive(
  env: TurnEnv,
  state: TurnState,
  calls: ModelCalls,
  choice: ModelChoice,
  first: Next,
): Promise<Driven> {
  const writer = env.input.continuations ?? env.engine.continuations;
  let next = first;
  for (;;) {
    if (next.kind === "finish") return { kind: "ended", ending: next.ending };
    if (next.kind === "park") {
      const continuation = continuationOf(env, state, choice, next);
      if (writer) await writeBoundary(writer, continuation);
      return { kind: "parked", continuation };
    }
    next =
      next.kind === "call_model"
        ? await modelStage(env, state, calls, choice)
        : await toolStage(env, state, calls, next);
    if (writer && next.kind !== "park" && !(next.kind === "run_tools" && uncommitted(env, next)))
      await writeBoundary(writer, continuationOf(env, state, choice, next));
  }
}

/**
 * Whether a step's tools run with no durability point before the next call's claim (issue 26): a
 * fresh step whose every call is a pure tool, the engine's search or a name the grant does not know
 * (an error observation, nothing runs), with no `tool:pre` or `tool:post` hook and no permission
 * controller (host code, each with its own durability point). Nothing commits until the next
 * boundary, so that boundary's record is the one written: a record here would be overwritten in the
 * same transaction, and a process that dies mid-tool leaves neither. Only with a grouping store
 * (a barrier): without one, each write commits alone and the record keeps what it is for.
 */
function uncommitted(env: TurnEnv, step: RunTools): boolean {
  const { grant, engine } = env;
  // Without a grouping store every write commits as it comes: the record costs what it always did.
  if (!engine.barrier || step.progress !== undefined || engine.permissions) return false;
  if (engine.hooks["tool:pre"] || engine.hooks["tool:post"]) return false;
  // The engine's search is no registered tool: like an unknown name, it has no handler of the host's.
  return step.calls.every((call) => grant.byName.get(call.name)?.pure !== false);
}

async function writeBoundary(writer: ContinuationWriter, continuation: Continuation) {
  try {
    await writer.write(continuation);
  } catch (error) {
    // A fenced scope refuses the write like every fenced write of the turn: its cause, not the record's.
    throw error instanceof ScopeFencedError
      ? new UncertainTurnError("scope_fenced", "the turn's scope was fenced", error)
      : new UncertainTurnError(
          "continuation",
          "the turn's continuation could not be written",
          error,
        );
  }
}

/** The turn at a step boundary, as data (see `Continuation`). */
export function continuationOf(
  env: TurnEnv,
  state: TurnState,
  choice: ModelChoice,
  next: Next,
): Continuation {
  const { input } = env;
  return {
    version: CONTINUATION_VERSION,
    root: {
      scope: input.scope,
      sessionId: input.sessionId,
      rootKey: input.rootKey,
      turnId: input.turnId,
    },
    intent: input.intent,
    grant: input.grant ?? null,
    choice,
    step: state.steps,
    next: nextOf(next),
    baseRevision: state.log.baseRevision,
    rotated: state.log.rotated,
    messages: state.log.added.map((message) => ({ ref: "inline", message })),
    counters: {
      callsUsed: state.callsUsed,
      operations: state.operations,
      requestedToolCalls: state.requestedToolCalls,
      modelTokens: state.modelTokens,
      webSearches: state.webSearches,
    },
    callIds: [...state.callIds],
    reservations: state.account.state(),
    grants: [...state.grants],
    toolCalls: [...state.toolCalls],
    warnings: [...state.warnings],
    warned: [...state.warned],
    failures: [...state.failures],
  };
}

function nextOf(next: Next): ContinuationNext {
  if (next.kind === "call_model") return { kind: "call_model" };
  if (next.kind === "finish") return { kind: "finish", terminalReason: next.ending.terminalReason };
  const tools = next.kind === "park" ? next.tools : next;
  return {
    kind: "run_tools",
    step: tools.step,
    last: tools.last ?? null,
    calls: tools.calls.map((c, i): ContinuationCall => {
      const base = { id: c.id, name: c.name, arguments: c.arguments };
      const at = tools.progress?.[i];
      if (at === undefined || at.state === "requested") return { ...base, state: "requested" };
      // A decided ask is only ever the first run of a resume: a boundary never records one.
      if (at.state === "asked" || at.state === "decided")
        return { ...base, state: "asked", ask: at.ask };
      return { ...base, state: "done", result: at.result };
    }),
  };
}
