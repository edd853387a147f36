import type { ModelRequest, ToolChoice, ToolSpec } from "@alma-harness/core";
import type { ToolChoiceParam, ToolParam } from "./wire.js";

/** The server web search tool version sent by default; newer versions share its shape. */
export const DEFAULT_WEB_SEARCH_TOOL = "web_search_20250305";

/**
 * The deferred tools a request loads natively, or undefined when it does not: the grant's
 * deferred definitions go on the wire with `defer_loading: true` and a search's loads become
 * `tool_reference` blocks (tool-search-tool, "Deferred tool loading" and "Custom tool search
 * implementation"), so the tools array is the same on every request while tools load. Only when
 * the model supports it, the client allows it, the request lists its deferred set with the
 * definitions, and at least one tool stays non-deferred (the API refuses a request whose tools are
 * all deferred: "At least one tool must have defer_loading=false").
 */
export function nativeDeferred(
  request: ModelRequest,
  allowed: boolean,
): ReadonlySet<string> | undefined {
  if (!allowed) return undefined;
  const specs = request.deferredToolSpecs;
  if (!request.deferredTools || request.deferredTools.length === 0 || !specs || specs.length === 0)
    return undefined;
  const deferred = new Set(specs.map((t) => t.name));
  if (
    !request.tools.some((t) => !deferred.has(t.name)) &&
    (request.providerTools?.length ?? 0) === 0
  )
    return undefined;
  return deferred;
}

const toParam = (t: ToolSpec): ToolParam => ({
  name: t.name,
  description: t.description,
  input_schema: t.inputSchema,
});

/**
 * Function tools with their JSON Schema, then the server web search tool when requested. Loading
 * natively (`deferred`), the advertised tools that are not deferred come first, then the web
 * search tool, then every deferred definition in the request's order with `defer_loading: true`:
 * a load changes the conversation, never this array.
 */
export function toAnthropicTools(
  request: ModelRequest,
  webSearchType: string,
  deferred?: ReadonlySet<string>,
): ToolParam[] {
  const advertised = deferred ? request.tools.filter((t) => !deferred.has(t.name)) : request.tools;
  const tools: ToolParam[] = advertised.map(toParam);
  for (const spec of request.providerTools ?? []) {
    if (spec.kind !== "web_search") continue;
    tools.push({
      type: webSearchType,
      name: "web_search",
      ...(spec.maxUses !== undefined ? { max_uses: spec.maxUses } : {}),
    });
  }
  if (deferred)
    for (const spec of request.deferredToolSpecs ?? [])
      tools.push({ ...toParam(spec), defer_loading: true });
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
