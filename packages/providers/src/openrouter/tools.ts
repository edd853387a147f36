import type { ModelRequest } from "@alma-harness/core";
import { toChatTools } from "../openai-chat/tools.js";
import type { ChatTool } from "../openai-chat/wire.js";
import type { OpenRouterWebSearchTool } from "./wire.js";

/**
 * Function tools with `strict: false` sent explicitly (some OpenRouter routes treat an omitted
 * value as strict and fill every optional property), then OpenRouter's server web search
 * (`openrouter:web_search`) when requested.
 */
export function toOpenRouterTools(request: ModelRequest): (ChatTool | OpenRouterWebSearchTool)[] {
  const tools: (ChatTool | OpenRouterWebSearchTool)[] = toChatTools(request).map((t) => ({
    ...t,
    function: { ...t.function, strict: false },
  }));
  for (const spec of request.providerTools ?? []) {
    if (spec.kind !== "web_search") continue;
    tools.push({
      type: "openrouter:web_search",
      ...(spec.maxUses !== undefined ? { parameters: { max_uses: spec.maxUses } } : {}),
    });
  }
  return tools;
}
