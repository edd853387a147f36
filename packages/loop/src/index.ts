export { AbortedError, CANCELLED_BEFORE_EXECUTION, CLEANUP_GRACE_MS, raceAbort } from "./cancel.js";
export { createEngine, type Engine, MAX_TERMINAL_TOOLS } from "./create-engine.js";
export type {
  BudgetMetric,
  EngineConfig,
  LoopLimits,
  TerminalReason,
  TurnInput,
  TurnOutcome,
  TurnResult,
  TurnToolCall,
  VolatileContext,
} from "./engine.js";
export { DelegationRefusedError, EngineConfigError, StreamInvalidError, StreamTornError, UncertainTurnError } from "./errors.js";
export type { LoopEvent, LoopEventSink } from "./events.js";
export { DEFAULT_FINAL_ANSWER_NOTICE, DEFAULT_TIME_NOTICE } from "./limits.js";
export type { PermissionController, PermissionDecision, PermissionRequest } from "./permission.js";
export { formatSse, loopEventToSse, type SseFrame } from "./sse.js";
export { CONTEXT_VERSION } from "./state.js";
export { STREAM_QUEUE_LIMIT, type StreamedTurn, type TurnStreamEvent } from "./stream-turn.js";
