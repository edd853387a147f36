import type {
  BudgetCapName,
  CallKind,
  CostReceipt,
  ModelChoice,
  ModelRequest,
  ProviderError,
  RejectionKind,
  Sensitivity,
  Tier,
  UnpricedReason,
} from "@alma-harness/core";
import { CallRefusedError, type StepOutput } from "@alma-harness/execution";
import type { BudgetMetric } from "./result.js";
import { CallRejectedError } from "./errors.js";

export interface StepCall {
  readonly kind: CallKind;
  readonly step: number;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
  readonly parentCallId?: string;
  readonly sensitivity: Sensitivity;
  readonly tier: Tier;
}

export interface StepDone {
  readonly output: StepOutput;
  readonly receipt: CostReceipt;
  readonly operationId: string;
}

/** A call refused at zero cost before anything was claimed or sent: its slot is given back. */
export type StepRefused =
  | { readonly status: "refused"; readonly reason: "cap"; readonly cap: BudgetCapName }
  | {
      readonly status: "refused";
      readonly reason: "unpriced";
      readonly missing: UnpricedReason;
      readonly model: string;
    };

/**
 * The trusted settled rejection marker: a provider refused the call before anything streamed,
 * attested (rate limit, overload) or as its own zero-usage context refusal, settled at zero.
 */
export interface Rejection {
  readonly proof: RejectionKind | "context_window";
  readonly callKind: CallKind;
  readonly providerError: ProviderError;
  readonly receipt: CostReceipt;
  readonly operationId: string;
}

/** How one governed round ended, as data. Only uncertainty is thrown (`UncertainTurnError`). */
export type StepResult =
  | { readonly status: "settled"; readonly done: StepDone }
  | StepRefused
  | { readonly status: "rejected"; readonly rejection: Rejection };

/** The budget metric a zero-cost refusal stops the turn on. */
export function refusedMetric(refused: StepRefused): BudgetMetric {
  return refused.reason === "cap" ? refused.cap : "unpriced";
}

/** A refusal as the host-facing error a child gateway throws (`delegate`'s throwing contract). */
export function refusalError(refused: StepRefused): CallRefusedError {
  return refused.reason === "cap"
    ? new CallRefusedError(
        "cap",
        `the ${refused.cap} cap leaves no room for this call; nothing was sent`,
        { cap: refused.cap },
      )
    : new CallRefusedError(
        "unpriced",
        `${refused.model} cannot be priced (${refused.missing}); nothing was sent`,
        { missing: refused.missing },
      );
}

/** A settled rejection nobody reacts to: uncertain, cause `call:<kind>:rejected:<proof>`. */
export function rejectionError(rejection: Rejection): CallRejectedError {
  return new CallRejectedError(rejection);
}
