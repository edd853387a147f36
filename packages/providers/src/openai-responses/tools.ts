import type { ModelRequest, ToolChoice } from "@alma-harness/core";
import { deferredTools, type NativeSearch, nativeTools } from "./tool-search.js";
import type { ResponsesTool, ResponsesToolChoice } from "./wire.js";

/**
 * Function tools (flat, non-strict: schemas are sent as registered), then `web_search`. Loading
 * natively (`native`, see tool-search.ts), `search_tools` is the client-executed `tool_search`
 * and every deferred definition follows with `defer_loading: true`: a load never changes this array.
 */
export function toResponsesTools(request: ModelRequest, native?: NativeSearch): ResponsesTool[] {
  const tools: ResponsesTool[] = native
    ? nativeTools(request, native)
    : request.tools.map((t) => ({
        type: "function",
        name: t.name,
        description: t.description,
        parameters: t.inputSchema,
        strict: false,
      }));
  if ((request.providerTools ?? []).some((p) => p.kind === "web_search"))
    tools.push({ type: "web_search" });
  if (native) tools.push(...deferredTools(request));
  return tools;
}

export function toResponsesToolChoice(choice: ToolChoice): ResponsesToolChoice {
  return choice.type === "tool" ? { type: "function", name: choice.name } : choice.type;
}
