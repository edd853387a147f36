export type { GovernedStepRunnerConfig, StepRunnerStores } from "./config.js";
export {
  StepCallConflictError,
  StepCallErasedError,
  StepCallInProgressError,
  type StepRunnerErrorCode,
  StepRunnerConfigError,
} from "./errors.js";
export type { InvalidReason, RefusedReason, StepResult } from "./outcome.js";
export { type StepMessage, type StepRequest, stepOperationId } from "./request.js";
export { createGovernedStepRunner, type GovernedStepRunner } from "./runner.js";
