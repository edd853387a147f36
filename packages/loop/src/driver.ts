import type { ModelChoice } from "@alma-harness/core";
import { UncertainTurnError } from "./errors.js";
import type { Continuation, ContinuationNext, ContinuationWriter } from "./continuation.js";
import { CONTINUATION_VERSION } from "./continuation.js";
import type { TurnEnv } from "./env.js";
import type { Ending } from "./limits.js";
import type { Next } from "./next.js";
import { modelStage } from "./model-stage.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";
import { toolStage } from "./tool-step.js";

/**
 * Runs the turn's steps from `first` to its ending. After each stage, at the step boundary, the
 * turn's continuation is handed to the engine's writer when one is configured (none: nothing is
 * built); a writer that fails makes the turn uncertain (cause `continuation`).
 */
export async function drive(
  env: TurnEnv,
  state: TurnState,
  calls: ModelCalls,
  choice: ModelChoice,
  first: Next,
): Promise<Ending> {
  const writer = env.engine.continuations;
  let next = first;
  for (;;) {
    if (next.kind === "finish") return next.ending;
    next =
      next.kind === "call_model"
        ? await modelStage(env, state, calls, choice)
        : await toolStage(env, state, calls, next);
    if (writer) await writeBoundary(writer, continuationOf(env, state, next));
  }
}

async function writeBoundary(writer: ContinuationWriter, continuation: Continuation) {
  try {
    await writer.write(continuation);
  } catch (error) {
    throw new UncertainTurnError(
      "continuation",
      "the turn's continuation could not be written",
      error,
    );
  }
}

/** The turn at a step boundary, as data (see `Continuation`). */
export function continuationOf(env: TurnEnv, state: TurnState, next: Next): Continuation {
  const { input } = env;
  const account = state.account;
  return {
    version: CONTINUATION_VERSION,
    root: {
      scope: input.scope,
      sessionId: input.sessionId,
      rootKey: input.rootKey,
      turnId: input.turnId,
    },
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
    reservations: {
      spentMicros: account.spentMicros,
      unsettled: account.unsettled,
      receipts: [...account.receipts],
    },
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
  return {
    kind: "run_tools",
    step: next.step,
    last: next.last ?? null,
    calls: next.calls.map((c) => ({
      id: c.id,
      name: c.name,
      arguments: c.arguments,
      state: "requested",
    })),
  };
}
