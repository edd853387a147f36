import { AlmaError } from "@alma-harness/core";

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
