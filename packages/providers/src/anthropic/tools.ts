import type { ModelRequest, ToolChoice } from "@alma-harness/core";
import type { ToolChoiceParam, ToolParam } from "./wire.js";

/** The server web search tool version sent by default; newer versions share its shape. */
export const DEFAULT_WEB_SEARCH_TOOL = "web_search_20250305";

/** Function tools with their JSON Schema, then the server web search tool when requested. */
export function toAnthropicTools(request: ModelRequest, webSearchType: string): ToolParam[] {
  const tools: ToolParam[] = request.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.inputSchema }));
  for (const spec of request.providerTools ?? []) {
    if (spec.kind !== "web_search") continue;
    tools.push({ type: webSearchType, name: "web_search", ...(spec.maxUses !== undefined ? { max_uses: spec.maxUses } : {}) });
  }
  return tools;
}

export function toAnthropicToolChoice(choice: ToolChoice): ToolChoiceParam {
  switch (choice.type) {
    case "auto":
      return { type: "auto" };
    case "none":
      return { type: "none" };
    case "required":
      return { type: "any" };
    case "tool":
      return { type: "tool", name: choice.name };
  }
}
