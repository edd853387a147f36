import {
  AlmaError,
  type BudgetCapName,
  type StreamRule,
  type UncertainCause,
  type UnpricedReason,
} from "@alma-harness/core";

/** A call refused before anything was claimed or sent, at zero cost: no price, or a block cap reached. */
export class CallRefusedError extends AlmaError {
  readonly reason: "unpriced" | "cap";
  readonly cap?: BudgetCapName;
  readonly missing?: UnpricedReason;
  constructor(
    reason: "unpriced" | "cap",
    message: string,
    detail: { readonly cap?: BudgetCapName; readonly missing?: UnpricedReason } = {},
  ) {
    super(`call_refused_${reason}`, message);
    this.reason = reason;
    if (detail.cap) this.cap = detail.cap;
    if (detail.missing) this.missing = detail.missing;
  }
}

/** A dispatched call whose cost cannot be settled (unknown or unpriced usage, or a duplicate claim). */
export class UnsettledCallError extends AlmaError {
  constructor(message: string, cause?: unknown) {
    super("unsettled_call", message, { cause });
  }
}

/** A cost-trail append failed: the turn is uncertain and nothing further may run. */
export class AuditFailedError extends AlmaError {
  constructor(message: string, cause?: unknown) {
    super("audit_failed", message, { cause });
  }
}

/** The model stream broke an integrity rule; no effect of that round is kept. */
export class StreamInvalidError extends AlmaError {
  readonly rule: StreamRule;
  constructor(rule: StreamRule, message: string) {
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

/**
 * A call whose outcome is not certain: it may have been sent, or its cost or trail could not be
 * made durable. `cause` is the turn's uncertainty cause (`call:<kind>:…`, `audit`, `cancelled`,
 * `deadline`). Never retried blindly: the turn ends `reconciliation_required`.
 */
export class UncertainCallError extends AlmaError {
  readonly uncertainCause: UncertainCause;
  /**
   * Whether another attempt may follow (spec: call-retry): `retry`, the call did not complete or
   * the provider gave nothing usable; `unsent`, a store failed before the provider, retried only
   * when the journal proves the call was never sent (`GovernedCalls.provenUnsent`). Absent: never.
   */
  readonly attempt?: AttemptClass;
  constructor(cause: UncertainCause, message: string, error?: unknown, attempt?: AttemptClass) {
    super("uncertain_call", message, { cause: error });
    this.uncertainCause = cause;
    if (attempt !== undefined) this.attempt = attempt;
  }
}

/** How a failed call may be tried again (see `UncertainCallError.attempt`). */
export type AttemptClass = "retry" | "unsent";
