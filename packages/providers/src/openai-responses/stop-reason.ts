import type { StopReason } from "@alma-harness/core";

/**
 * The Responses API has no finish reason: a completed response with function calls stopped for
 * them; an incomplete one says why in `incomplete_details.reason` (kept verbatim when unknown).
 */
export function responsesStopReason(
  status: "completed" | "incomplete",
  incompleteReason: string | undefined,
  hasToolCalls: boolean,
): StopReason {
  if (status === "completed") return hasToolCalls ? "tool_use" : "end_turn";
  switch (incompleteReason) {
    case "max_output_tokens":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    default:
      return incompleteReason ?? "incomplete";
  }
}
