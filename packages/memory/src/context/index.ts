// The pure context helpers (`@alma-harness/memory/context`): token estimates and trimming, for hosts
// that trim outside the governed rotation. The loop re-exports them with identity kept.
export {
  estimateMessagesTokens,
  estimateMessageTokens,
  estimateTokens,
  MEDIA_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  TOOL_OVERHEAD_TOKENS,
} from "./estimate.js";
export {
  TRIMMED_MARKER_PREFIX,
  type TrimOutcome,
  type TrimResult,
  trimContext,
  trimmedMarkerMessage,
} from "./trim.js";
