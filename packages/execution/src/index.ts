export { AuditFailedError, CallRefusedError, UnsettledCallError } from "./errors.js";
export {
  type CallIdentity,
  GovernedCalls,
  type GovernedCallsConfig,
  newTurnLedger,
  type PreparedCall,
  type TurnLedger,
} from "./governed-call.js";
export { unpricedBeforeDispatch } from "./preflight.js";
