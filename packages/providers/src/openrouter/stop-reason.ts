/**
 * OpenRouter normalizes finish reasons to the Chat Completions set (`stop | length | tool_calls |
 * content_filter | error`) and keeps the upstream one in `native_finish_reason`. The mapping is
 * the Chat Completions one; `error` is not a stop reason but a failure, thrown by the transform.
 */
export { chatStopReason as openRouterStopReason } from "../openai-chat/stop-reason.js";
