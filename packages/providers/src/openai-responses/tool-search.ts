import {
  type JsonObject,
  type ModelRequest,
  SEARCH_TOOLS_NAME,
  type ToolCallBlock,
  type ToolResultBlock,
  type ToolSpec,
} from "@alma-harness/core";
import type { InputItem, ResponsesTool } from "./wire.js";

/**
 * Native deferred loading on the Responses API: OpenAI's tool search with client execution
 * (developers.openai.com/api/docs/guides/tools-tool-search: "Add tool_search as a tool in your
 * tools array" and "mark the ones you want to defer with defer_loading: true"; "Only gpt-5.4 and
 * later models support tool_search"; a client-executed search arrives as a `tool_search_call`
 * and is answered with a `tool_search_output` whose `tools` are the definitions it loads, which
 * the API injects "at the end of the context window" so the cache holds).
 *
 * Loading natively, the engine's governed `search_tools` is advertised as the client-executed
 * `tool_search` tool with its own description and parameters, and every deferred definition of
 * the grant is sent with `defer_loading: true` in the request's order: the tools array is the same
 * on every request while tools load. A `search_tools` call in the history is replayed as a
 * `tool_search_call`, its result as a `tool_search_output` carrying the definitions it loaded; the
 * result's text (what was ambiguous, unknown or already available) has no field there, so it
 * follows as text in the same user message. Built from the documentation; no recorded exchange.
 */

/** gpt-5.4 and later (gpt-5.4, gpt-5.5, gpt-6, their dated and sized variants). */
export function supportsToolSearch(model: string): boolean {
  const match = /^gpt-(\d+)(?:\.(\d+))?/.exec(model);
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2] ?? 0)];
  return major > 5 || (major === 5 && minor >= 4);
}

/** The deferred definitions by name, when this request loads natively; else undefined. */
export type NativeSearch = ReadonlyMap<string, ToolSpec>;

/**
 * Whether a request loads natively: the client allows it, the model supports tool search, the
 * request lists its deferred definitions, and it advertises `search_tools` (the search the model
 * calls). Otherwise loaded tools are appended as functions, in load order.
 */
export function nativeSearch(request: ModelRequest, allowed: boolean): NativeSearch | undefined {
  if (!allowed || !supportsToolSearch(request.model)) return undefined;
  const specs = request.deferredToolSpecs ?? [];
  if (specs.length === 0 || !request.tools.some((t) => t.name === SEARCH_TOOLS_NAME))
    return undefined;
  return new Map(specs.map((s) => [s.name, s]));
}

const fn = (t: ToolSpec): ResponsesTool => ({
  type: "function",
  name: t.name,
  description: t.description,
  parameters: t.inputSchema,
  strict: false,
});

/** The tools array when loading natively: the advertised tools (search_tools as `tool_search`), then every deferred definition. */
export function nativeTools(request: ModelRequest, native: NativeSearch): ResponsesTool[] {
  const tools: ResponsesTool[] = [];
  for (const t of request.tools) {
    if (native.has(t.name)) continue;
    if (t.name === SEARCH_TOOLS_NAME)
      tools.push({
        type: "tool_search",
        execution: "client",
        description: t.description,
        parameters: t.inputSchema,
      });
    else tools.push(fn(t));
  }
  return tools;
}

/** The deferred definitions, each marked `defer_loading`, in the request's order (after any built-in tool). */
export function deferredTools(request: ModelRequest): ResponsesTool[] {
  return (request.deferredToolSpecs ?? []).map((s) => ({ ...fn(s), defer_loading: true }));
}

/** A `search_tools` call replayed as the client-executed search the model made. */
export function searchCallItem(block: ToolCallBlock): InputItem {
  return {
    type: "tool_search_call",
    call_id: block.id,
    execution: "client",
    status: "completed",
    arguments: block.input as JsonObject,
  };
}

/** A `search_tools` result as the search's output: the definitions it loaded that the request defers. */
export function searchOutputItem(block: ToolResultBlock, native: NativeSearch): InputItem {
  const loads = Array.isArray(block.loads) ? block.loads : [];
  const tools = loads.flatMap((name) => {
    const spec = native.get(name);
    return spec ? [{ ...fn(spec), defer_loading: true } as JsonObject] : [];
  });
  return {
    type: "tool_search_output",
    call_id: block.callId,
    execution: "client",
    status: "completed",
    tools,
  };
}
