import { AlmaError } from "@alma-harness/core";

/** The codes a step runner's errors carry (a closed vocabulary a host switches on). */
export type StepRunnerErrorCode =
  | "step_call_conflict"
  | "step_call_in_progress"
  | "step_call_erased"
  | "invalid_config";

/** The idempotency key was used before with other content (request, routing or configuration revision): nothing ran. */
export class StepCallConflictError extends AlmaError<StepRunnerErrorCode> {
  readonly operationId: string;
  constructor(operationId: string) {
    super("step_call_conflict", `idempotency key of ${operationId} was used with other content`);
    this.operationId = operationId;
  }
}

/**
 * Another caller holds this key's call: it is being claimed, sent or settled now. Nothing ran for
 * this caller and nothing will: the same request, later, replays the first caller's result.
 */
export class StepCallInProgressError extends AlmaError<StepRunnerErrorCode> {
  readonly operationId: string;
  constructor(operationId: string) {
    super(
      "step_call_in_progress",
      `the call of ${operationId} is in progress under another caller`,
      { retryable: true },
    );
    this.operationId = operationId;
  }
}

/** The key's stored result was erased or has expired: it is never answered again, and never re-run under that key. */
export class StepCallErasedError extends AlmaError<StepRunnerErrorCode> {
  readonly operationId: string;
  constructor(operationId: string, state: "erased" | "expired") {
    super("step_call_erased", `the result of ${operationId} is ${state}`);
    this.operationId = operationId;
  }
}

/** A step runner built with a configuration it cannot honor (thrown synchronously by `createGovernedStepRunner`). */
export class StepRunnerConfigError extends AlmaError<StepRunnerErrorCode> {
  constructor(message: string) {
    super("invalid_config", message);
  }
}
