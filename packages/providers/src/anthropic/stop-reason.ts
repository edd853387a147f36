import type { StopReason } from "@alma-harness/core";

/** Anthropic `stop_reason` → neutral; an unknown reason is kept verbatim, never guessed. */
export function anthropicStopReason(reason: string): StopReason {
  switch (reason) {
    case "end_turn":
    case "tool_use":
    case "max_tokens":
    case "stop_sequence":
    case "pause_turn":
    case "refusal":
      return reason;
    case "model_context_window_exceeded":
      return "context_window_exceeded";
    default:
      return reason;
  }
}
