import type { ModelRequest, ToolChoice } from "@alma-harness/core";
import type { ResponsesTool, ResponsesToolChoice } from "./wire.js";

/** Function tools (flat, non-strict: schemas are sent as registered), then `web_search`. */
export function toResponsesTools(request: ModelRequest): ResponsesTool[] {
  const tools: ResponsesTool[] = request.tools.map((t) => ({
    type: "function",
    name: t.name,
    description: t.description,
    parameters: t.inputSchema,
    strict: false,
  }));
  if ((request.providerTools ?? []).some((p) => p.kind === "web_search")) tools.push({ type: "web_search" });
  return tools;
}

export function toResponsesToolChoice(choice: ToolChoice): ResponsesToolChoice {
  return choice.type === "tool" ? { type: "function", name: choice.name } : choice.type;
}
