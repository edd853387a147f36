export {
  CACHE_HYGIENE_CAUSES,
  type CacheHygieneCause,
  CacheHygieneConfigError,
  type CacheHygieneGuard,
  type CacheHygieneNotice,
  type CacheHygieneOptions,
  type CacheHygieneWarning,
  type CacheObservation,
  cacheHygieneGuard,
} from "./cache-hygiene.js";
export { AbortedError, CANCELLED_BEFORE_EXECUTION, CLEANUP_GRACE_MS, raceAbort } from "./cancel.js";
export { type AskDecision, askDigest } from "./asks.js";
export {
  CONTINUATION_LIMITS,
  CONTINUATION_VERSION,
  CONTINUATION_VERSIONS,
  type Continuation,
  type ContinuationCall,
  type ContinuationCounters,
  ContinuationError,
  type ContinuationLast,
  type ContinuationMessage,
  type ContinuationNext,
  type ContinuationReservations,
  type ContinuationWriter,
  type OutputRef,
  type PendingAsk,
  type StoredContinuation,
  type TurnMessageOutput,
} from "./continuation.js";
export { readContinuation, type StoredOutput } from "./continuation-read.js";
export { messageDigest, referToOutputs } from "./continuation-refs.js";
export { createEngine, type Engine, MAX_TERMINAL_TOOLS } from "./create-engine.js";
export { TERMINAL_REASONS } from "./engine.js";
export { replyText } from "./result.js";
export type {
  BudgetMetric,
  EngineConfig,
  LongContextPolicy,
  LoopLimits,
  TerminalReason,
  TurnCallFailure,
  TurnInput,
  TurnOutcome,
  TurnResult,
  TurnToolCall,
  VolatileContext,
} from "./engine.js";
export {
  CallRejectedError,
  CallUnansweredError,
  DelegationRefusedError,
  EngineConfigError,
  StreamInvalidError,
  StreamTornError,
  UncertainTurnError,
} from "./errors.js";
export type { LoopEvent, LoopEventSink } from "./events.js";
export { CONTEXT_REJECTION_PROVIDERS } from "@alma-harness/execution";
export { DEFAULT_FINAL_ANSWER_NOTICE, DEFAULT_TIME_NOTICE, MAX_CALL_ATTEMPTS } from "./limits.js";
export {
  MAX_MEDIA_BYTES,
  type MediaBytes,
  type MediaConfig,
  type MediaSource,
  type MediaSourceContext,
} from "./media.js";
export {
  DEFAULT_COLD_AFTER_MS,
  DEFAULT_SUMMARY_FRAME,
  measuredText,
  SUMMARY_INSTRUCTION,
} from "./long-context.js";
export type { PermissionController, PermissionDecision, PermissionRequest } from "./permission.js";
export {
  EXTRACTION_INSTRUCTION,
  type ExtractionConfig,
  type ExtractionOutcome,
} from "./extraction-config.js";
export { EXTRACTION_TRANSCRIPT_MAX } from "./extraction.js";
export {
  DEFAULT_RECALL,
  RECALL_LABEL,
  RECALL_QUERY_MAX,
  type RecallConfig,
  renderRecall,
} from "./recall.js";
export { formatSse, loopEventToSse, type SseFrame } from "./sse.js";
export { CONTEXT_VERSION } from "./state.js";
export { StreamQueue } from "./stream-queue.js";
export {
  type ProgressEvent,
  progressOf,
  STREAM_QUEUE_LIMIT,
  type StreamedTurn,
  type TurnStreamEvent,
} from "./stream-turn.js";

// The pure context helpers, re-exported with identity kept (the same functions as `@alma-harness/memory/context`).
export {
  estimateMessagesTokens,
  estimateMessageTokens,
  estimateTokens,
  TRIMMED_MARKER_PREFIX,
  type TrimOutcome,
  type TrimResult,
  trimContext,
  trimmedMarkerMessage,
} from "@alma-harness/memory/context";
