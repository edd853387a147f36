import type { AttemptClass } from "@alma-harness/execution";
import {
  AlmaError,
  type CallKind,
  type CostReceipt,
  type ProviderError,
  type RejectionKind,
  type UncertainCause,
} from "@alma-harness/core";

export { StreamInvalidError, StreamTornError } from "@alma-harness/execution";

/** A turn that cannot end honestly as completed: carries the first cause that noted it. */
export class UncertainTurnError extends AlmaError {
  readonly cause_: UncertainCause;
  /** Whether another attempt of the call may follow (spec: call-retry); absent: never. */
  readonly attempt?: AttemptClass;
  constructor(cause: UncertainCause, message: string, error?: unknown, attempt?: AttemptClass) {
    super("uncertain_turn", message, { cause: error });
    this.cause_ = cause;
    if (attempt !== undefined) this.attempt = attempt;
  }
}

/**
 * A call out of attempts (spec: call-retry): every attempt failed, or the last one cannot be tried
 * again (a refused request, the retry's routing). A main step ends the turn `unanswered`, a child
 * hands its handler empty text; anywhere else it is uncertain, with the last failure's cause.
 */
export class CallUnansweredError extends UncertainTurnError {
  constructor(cause: UncertainCause, message: string, error?: unknown) {
    super(cause, message, error);
  }
}

/**
 * The trusted settled rejection marker (spec: safe-context-rejection-rotation, pre-stream-rejections):
 * a provider refused a call before anything streamed, attested by a `RejectionProof` (rate limit,
 * overload) or as a zero-usage `context_window` error from the call's own provider, and the call
 * was settled at zero. The main loop may react to it; anywhere else it is uncertain, as any failure.
 */
export class CallRejectedError extends UncertainTurnError {
  readonly proof: RejectionKind | "context_window";
  readonly callKind: CallKind;
  readonly providerError: ProviderError;
  readonly receipt: CostReceipt;
  readonly operationId: string;
  constructor(init: {
    proof: RejectionKind | "context_window";
    callKind: CallKind;
    providerError: ProviderError;
    receipt: CostReceipt;
    operationId: string;
  }) {
    super(
      `call:${init.callKind}:rejected:${init.proof}`,
      init.providerError.message,
      init.providerError,
    );
    this.proof = init.proof;
    this.callKind = init.callKind;
    this.providerError = init.providerError;
    this.receipt = init.receipt;
    this.operationId = init.operationId;
  }
}

export class DelegationRefusedError extends AlmaError {
  readonly reason: "depth" | "sensitivity" | "tool_grant";
  constructor(reason: "depth" | "sensitivity" | "tool_grant") {
    super("delegation_refused", `delegation refused: ${reason}`);
    this.reason = reason;
  }
}

/** Misconfiguration found when the engine is built. */
export class EngineConfigError extends AlmaError {
  constructor(message: string) {
    super("invalid_config", message);
  }
}
