import {
  type BudgetCapName,
  failureOf,
  type LifecycleHooks,
  ProviderError,
  trailJoin,
  trailKind,
  type TurnFailure,
} from "@alma-harness/core";
import { AbortedError, abortReason } from "./cancel.js";
import type { TurnOutcome, TurnResult } from "./result.js";
import { StreamInvalidError, StreamTornError, UncertainTurnError } from "./errors.js";
import type { Ending } from "./limits.js";
import type { Continuation } from "./continuation.js";
import type { Recorder } from "./recorder.js";
import type { TurnState } from "./state.js";
import { kindOrUnknown } from "./trail.js";

function capWarnings(state: TurnState): string[] {
  const seen = new Set<BudgetCapName>();
  for (const r of state.receipts) for (const cap of r.capsCrossed) seen.add(cap);
  return [...seen].map((cap) => `${cap}:crossed`);
}

/** Whatever stopped a turn, as the one cause the uncertain exit reports. */
export function toUncertain(signal: AbortSignal, error: unknown): UncertainTurnError {
  if (error instanceof UncertainTurnError) return error;
  if (signal.aborted || error instanceof AbortedError) {
    const reason = signal.aborted ? abortReason(signal) : (error as Error);
    const cause =
      reason instanceof AbortedError && reason.reason === "deadline" ? "deadline" : "cancelled";
    return new UncertainTurnError(cause, reason.message, reason);
  }
  return new UncertainTurnError("loop", (error as Error)?.message ?? String(error), error);
}

/** The failure a host reads, classified once: cancellation, deadlines, stream rules, provider errors. */
function failureFor(error: UncertainTurnError): TurnFailure {
  const cause: unknown = error.cause;
  if (cause instanceof ProviderError) return { ...failureOf(cause), message: error.message };
  let kind: TurnFailure["kind"] = "unknown";
  if (cause instanceof AbortedError) kind = cause.reason === "cancelled" ? "cancelled" : "timeout";
  else if (cause instanceof StreamInvalidError) kind = "stream_invalid";
  else if (cause instanceof StreamTornError) kind = "stream_torn";
  return { kind, message: error.message, retryable: false };
}

/** What the exits read besides the turn's state: its recorder, session, `turn:end` and signal. */
export interface TurnExit {
  readonly rec: Recorder;
  readonly sessionId: string;
  readonly turnEnd: LifecycleHooks["turn:end"];
  readonly signal: AbortSignal;
}

/**
 * The completed exit: `turn:end`, the lifecycle record, then exactly one `turn.completed`. A throw
 * here (the hook, the record) is caught by the caller and leaves through `finalizeUncertain`
 * instead, which never throws: exactly one terminal result either way, and a durable append that
 * may have landed is never retried.
 */
export async function finalizeCompleted(
  exit: TurnExit,
  state: TurnState,
  ending: Ending,
): Promise<TurnOutcome> {
  const { rec } = exit;
  try {
    const result: TurnResult = Object.freeze({
      turnId: rec.turnId,
      ...ending,
      toolCalls: Object.freeze([...state.toolCalls]),
      usage: state.usage,
      costMicros: state.account.spentMicros,
      receipts: Object.freeze([...state.receipts]),
      warnings: Object.freeze([...state.warnings, ...capWarnings(state)]),
      ...attemptFields(state),
    });
    const hook = exit.turnEnd;
    if (hook) {
      await rec.commit();
      try {
        await hook(
          Object.freeze({
            turnId: rec.turnId,
            sessionId: exit.sessionId,
            outcome: "completed" as const,
            ...(result.stopReason ? { stopReason: result.stopReason } : {}),
          }),
        );
      } catch (error) {
        throw new UncertainTurnError("hook:turn:end", "the turn:end hook threw", error);
      }
    }
    await rec.record("lifecycle", {
      action: "turn.completed",
      detail: trailKind(result.terminalReason),
      messageRevision: state.log.revision,
    });
    rec.emit({
      type: "turn.completed",
      turnId: rec.turnId,
      outcome: "completed",
      terminalReason: result.terminalReason,
    });
    return { status: "completed", result, messages: Object.freeze([...state.log.added]) };
  } catch (error) {
    return finalizeUncertain(exit, state, toUncertain(exit.signal, error));
  }
}

/**
 * The parked exit: the turn waits for a person and holds nothing. `turn.parked` on the lifecycle
 * trail and one `turn.parked` event; `turn:end` does not run (the turn has not ended). A throw here
 * is the caller's to leave through `finalizeUncertain`.
 */
export async function finalizeParked(
  exit: TurnExit,
  state: TurnState,
  continuation: Continuation,
): Promise<TurnOutcome> {
  const { rec } = exit;
  const asks =
    continuation.next.kind === "run_tools"
      ? continuation.next.calls.flatMap((c) => (c.state === "asked" ? [c.ask] : []))
      : [];
  await rec.record("lifecycle", {
    action: "turn.parked",
    detail: trailJoin(trailKind("asks"), asks.length),
    messageRevision: state.log.revision,
  });
  // What was recorded before the park is durable before the process lets go of the turn.
  await rec.commit();
  rec.emit({
    type: "turn.parked",
    turnId: rec.turnId,
    asks: asks.map((a) => ({ askId: a.askId, callId: a.callId, name: a.tool })),
  });
  return {
    status: "awaiting_approval",
    continuation,
    asks,
    messages: Object.freeze([...state.log.added]),
  };
}

/** What the result adds for failed calls (spec: call-retry): absent when every call settled. */
function attemptFields(state: TurnState): Pick<TurnResult, "failures" | "unsettledCalls"> {
  const unsettled = state.account.unsettled;
  return {
    ...(state.failures.length > 0
      ? { failures: Object.freeze(state.failures.map((f) => Object.freeze({ ...f }))) }
      : {}),
    ...(unsettled > 0 ? { unsettledCalls: unsettled } : {}),
  };
}

/** The uncertain exit. It never throws: its own record is best effort, and the outcome stands. */
export async function finalizeUncertain(
  exit: TurnExit,
  state: TurnState,
  error: UncertainTurnError,
): Promise<TurnOutcome> {
  const { rec } = exit;
  let failure: TurnFailure;
  try {
    failure = failureFor(error);
  } catch {
    failure = { kind: "unknown", message: "the turn failed", retryable: false };
  }
  try {
    await rec.record("lifecycle", {
      action: "turn.uncertain",
      detail: kindOrUnknown(error.cause_),
    });
  } catch {
    // the audit log may be what failed; the outcome is already uncertain
  }
  const hook = exit.turnEnd;
  // When turn:end itself failed it is not called again; when the completed record failed after it
  // ran, it is called once more, so the last thing it hears is the outcome that stands.
  if (hook && error.cause_ !== "hook:turn:end") {
    // A commit that fails here changes nothing: the turn is uncertain already.
    await rec.commit().catch(() => undefined);
    try {
      await hook(
        Object.freeze({
          turnId: rec.turnId,
          sessionId: exit.sessionId,
          outcome: "reconciliation_required" as const,
        }),
      );
    } catch {
      // a failing turn:end cannot make an uncertain turn more uncertain
    }
  }
  rec.emit({
    type: "turn.completed",
    turnId: rec.turnId,
    outcome: "reconciliation_required",
    cause: error.cause_,
  });
  return {
    status: "reconciliation_required",
    cause: error.cause_,
    failure,
    messages: Object.freeze([...state.log.added]),
    receipts: Object.freeze([...state.receipts]),
  };
}
