import { AlmaError, type BudgetCapName, type UnpricedReason } from "@alma-harness/core";

/** A call refused before anything was claimed or sent, at zero cost: no price, or a block cap reached. */
export class CallRefusedError extends AlmaError {
  readonly reason: "unpriced" | "cap";
  readonly cap?: BudgetCapName;
  readonly missing?: UnpricedReason;
  constructor(reason: "unpriced" | "cap", message: string, detail: { readonly cap?: BudgetCapName; readonly missing?: UnpricedReason } = {}) {
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
