import type { StopReason } from "@alma-harness/core";

/**
 * Chat Completions `finish_reason` → neutral. `stop` with tool calls on the wire is `tool_use`
 * (several self-hosted servers report it so); an unknown reason is kept verbatim.
 */
export function chatStopReason(reason: string, hasToolCalls: boolean): StopReason {
  switch (reason) {
    case "stop":
      return hasToolCalls ? "tool_use" : "end_turn";
    case "length":
      return "max_tokens";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default:
      return reason;
  }
}
