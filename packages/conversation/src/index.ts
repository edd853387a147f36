export {
  type ConversationConfig,
  type ConversationStores,
  type ConversationTool,
  type ConversationToolCtx,
  DEFAULT_APPROVAL_TTL_MS,
  type DescriptorConfig,
  type EngineOptions,
  EXPIRED_RELEASE_GRACE_MS,
  type EventLabels,
  MAX_APPROVAL_TTL_MS,
  MAX_RUN_TIMEOUT_MS,
  type UncertainTurnEvent,
} from "./config.js";
/**
 * Re-exported from core: the error a new key of a fenced scope rejects with (spec: scope-fence), and
 * the conflict every `EventRefusedError` is (`ExecutionConflictError` is the seed's name for it).
 */
export {
  ConflictError,
  ExecutionConflictError,
  type ScopeFence,
  ScopeFencedError,
  type ScopeFenceReason,
  type ScopeFenceTarget,
} from "@alma-harness/core";
/** The reply of a completed view as one string (`replyText(view.result)`); `reply` stays blocks. */
export { replyText } from "@alma-harness/loop";
export type { ResolveAskRequest, ResolveAskResult } from "./asks.js";
export type { ParkedAskView } from "./parking.js";
export {
  ASK_REFUSALS,
  type AskRefusal,
  AskRefusedError,
  ConversationConfigError,
  ConversationConflictError,
  ConversationStreamResyncError,
  EventRefusedError,
  type EventRefusalReason,
  type ResyncReason,
} from "./errors.js";
export type { RecordedEvent, RecordEventsRequest, RecordEventsResult } from "./events.js";
export type { TurnInputContent } from "./input.js";
export { conversationRootKey } from "./keys.js";
export {
  createConversationDescriptor,
  type ExplicitTurnRequest,
  type LoadInputContext,
  type RunTurnRequest,
  type TurnRequest,
} from "./request.js";
export type { ConversationRootDescriptor } from "./root.js";
export { DEFAULT_EVENT_LABELS, renderEvents } from "./render.js";
export type { ExpiredRelease, UnresolvedPage } from "./maintenance.js";
export type { StoredStep } from "./read.js";
export { type ConversationRunner, createConversationRunner } from "./runner.js";
export type { ProgressEvent } from "./step-outputs.js";
export {
  type ConversationStream,
  type ConversationStreamEvent,
  STREAM_METADATA_LIMIT,
  STREAM_QUEUE_LIMIT,
} from "./stream.js";
export type { AuditPage, SessionTrailQuery } from "./trails.js";
export type { AwaitingAsk, ConversationView, FinalEnvelope } from "./views.js";
