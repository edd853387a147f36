import { AlmaError, type CallKind, type CostReceipt, type ProviderError, type RejectionKind } from "@alma-harness/core";

/** The model stream broke an integrity rule; no effect of that round is kept. */
export class StreamInvalidError extends AlmaError {
  readonly rule: string;
  constructor(rule: string, message: string) {
    super("RUNTIME_MODEL_STREAM_INVALID", `${rule}: ${message}`);
    this.rule = rule;
  }
}

/** The model stream ended without a terminal frame. */
export class StreamTornError extends AlmaError {
  constructor() {
    super("stream_torn", "the model stream ended without a terminal frame");
  }
}

/** A turn that cannot end honestly as completed: carries the first cause that noted it. */
export class UncertainTurnError extends AlmaError {
  readonly cause_: string;
  constructor(cause: string, message: string, error?: unknown) {
    super("uncertain_turn", message, { cause: error });
    this.cause_ = cause;
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
  constructor(init: { proof: RejectionKind | "context_window"; callKind: CallKind; providerError: ProviderError; receipt: CostReceipt; operationId: string }) {
    super(`call:${init.callKind}:rejected:${init.proof}`, init.providerError.message, init.providerError);
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
