import { type BudgetCapName, failureOf, type TurnFailure } from "@alma-harness/core";
import { durable } from "./audit.js";
import type { TurnOutcome, TurnResult } from "./engine.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import type { TurnState } from "./state.js";

type Ending = Omit<TurnResult, "turnId" | "usage" | "costMicros" | "receipts" | "toolCalls" | "warnings">;

function capWarnings(state: TurnState): string[] {
  const seen = new Set<BudgetCapName>();
  for (const r of state.receipts) for (const cap of r.capsCrossed) seen.add(cap);
  return [...seen].map((cap) => `${cap}:crossed`);
}

/**
 * The completed exit: `turn:end`, the lifecycle trail, then exactly one `turn.completed`. Anything
 * that throws here sends the turn to `finalizeUncertain` instead (the one retry, as a failed outcome).
 */
export async function finalizeCompleted(env: TurnEnv, state: TurnState, ending: Ending): Promise<TurnOutcome> {
  const { engine, input } = env;
  const result: TurnResult = Object.freeze({
    turnId: input.turnId,
    ...ending,
    toolCalls: Object.freeze([...state.toolCalls]),
    usage: state.usage,
    costMicros: state.ledger.spentMicros,
    receipts: Object.freeze([...state.receipts]),
    warnings: Object.freeze([...state.warnings, ...capWarnings(state)]),
  });
  const hook = engine.hooks["turn:end"];
  if (hook) {
    try {
      await hook(Object.freeze({ turnId: input.turnId, sessionId: input.sessionId, outcome: "completed" as const, ...(result.stopReason ? { stopReason: result.stopReason } : {}) }));
    } catch (error) {
      throw new UncertainTurnError("hook:turn:end", "the turn:end hook threw", error);
    }
  }
  await durable(engine.audit, {
    trail: "lifecycle",
    action: "turn.completed",
    scope: input.scope,
    sessionId: input.sessionId,
    turnId: input.turnId,
    at: engine.clock.now(),
    detail: result.terminalReason,
    messageRevision: state.revision,
  });
  env.emit({ type: "turn.completed", turnId: input.turnId, outcome: "completed", terminalReason: result.terminalReason });
  return { status: "completed", result, messages: Object.freeze([...state.added]) };
}

/** The uncertain exit. It never throws: its own record is best effort, and the outcome stands. */
export async function finalizeUncertain(env: TurnEnv, state: TurnState, error: UncertainTurnError): Promise<TurnOutcome> {
  const { engine, input } = env;
  const failure: TurnFailure = error.cause !== undefined ? { ...failureOf(error.cause), message: error.message } : { kind: "unknown", message: error.message, retryable: false };
  try {
    await engine.audit.append({
      trail: "lifecycle",
      action: "turn.uncertain",
      scope: input.scope,
      sessionId: input.sessionId,
      turnId: input.turnId,
      at: engine.clock.now(),
      detail: error.cause_,
    });
  } catch {
    // the audit log may be what failed; the outcome is already uncertain
  }
  const hook = engine.hooks["turn:end"];
  if (hook) {
    try {
      await hook(Object.freeze({ turnId: input.turnId, sessionId: input.sessionId, outcome: "reconciliation_required" as const }));
    } catch {
      // a failing turn:end cannot make an uncertain turn more uncertain
    }
  }
  env.emit({ type: "turn.completed", turnId: input.turnId, outcome: "reconciliation_required", cause: error.cause_ });
  return {
    status: "reconciliation_required",
    cause: error.cause_,
    failure,
    messages: Object.freeze([...state.added]),
    receipts: Object.freeze([...state.receipts]),
  };
}
