export { AbortedError, abortRacer, abortReason, RELEASED, startTimer } from "./abort.js";
export { type AccountState, TurnAccount } from "./account.js";
export { argumentsOf } from "./arguments.js";
export { attestedRejection, CONTEXT_REJECTION_PROVIDERS } from "./attest.js";
export {
  type AttemptClass,
  AuditFailedError,
  CallRefusedError,
  StreamInvalidError,
  StreamTornError,
  UncertainCallError,
  UnsettledCallError,
} from "./errors.js";
export {
  type DeferredClaim,
  type DeferredClaimOptions,
  DeferredCalls,
  type DeferredSettlement,
  type DeferredTicket,
} from "./deferred.js";
export type { AdmitOptions, SpendBefore } from "./admit.js";
export {
  type CallIdentity,
  type CallOptions,
  type CallOutcome,
  GovernedCalls,
  type GovernedCallsConfig,
} from "./governed-call.js";
export { LATE_USAGE_GRACE_MS, LATE_USAGE_MAX_EVENTS, LateUsage } from "./late-usage.js";
export { unpricedBeforeDispatch } from "./preflight.js";
export {
  collectStep,
  type StepOrigin,
  type StepOutput,
  type StreamSeen,
} from "./stream-validate.js";
