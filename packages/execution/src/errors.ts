import { AlmaError, type BudgetCapName } from "@alma-harness/core";

/** A call refused before anything was claimed or sent, at zero cost. */
export class CallRefusedError extends AlmaError {
  readonly reason: "unpriced" | "cap";
  readonly cap?: BudgetCapName;
  constructor(reason: "unpriced" | "cap", message: string, cap?: BudgetCapName) {
    super(`call_refused_${reason}`, message);
    this.reason = reason;
    if (cap) this.cap = cap;
  }
}

/** A dispatched call whose cost cannot be settled (unknown or unpriced usage, or a duplicate claim). */
export class UnsettledCallError extends AlmaError {
  constructor(message: string) {
    super("unsettled_call", message);
  }
}
