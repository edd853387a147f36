import type { CacheControls, CacheTtl, ModelRequest } from "@alma-harness/core";
import { renderText } from "../shared/text.js";
import { toAnthropicMessages } from "./messages.js";
import { type AnthropicModelTraits, thinkingBudget } from "./models.js";
import { nativeDeferred, toAnthropicToolChoice, toAnthropicTools } from "./tools.js";
import type { CacheControl, ContentParam, RequestBody } from "./wire.js";

export interface BodyOptions {
  readonly traits: AnthropicModelTraits;
  readonly webSearchType: string;
  /** Whether the client loads deferred tools natively where the model supports it (default true). */
  readonly nativeDeferred?: boolean;
}

/** The exact `/v1/messages` body for a validated neutral request. */
export function buildAnthropicBody(request: ModelRequest, options: BodyOptions): RequestBody {
  const body: RequestBody = {
    model: request.model,
    max_tokens: request.maxOutputTokens,
    messages: [],
    stream: true,
  };
  const harness = new WeakSet<object>();
  const deferred = nativeDeferred(
    request,
    options.nativeDeferred !== false && options.traits.toolSearch,
  );
  body.messages = toAnthropicMessages(request.messages, request.model, harness, deferred);
  const system = request.system
    .map((b) => ({ type: "text" as const, text: renderText(b) }))
    .filter((b) => b.text.length > 0);
  if (system.length > 0) body.system = system;
  const tools = toAnthropicTools(request, options.webSearchType, deferred);
  if (tools.length > 0) body.tools = tools;
  if (request.toolChoice) body.tool_choice = toAnthropicToolChoice(request.toolChoice);
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.reasoning) {
    if (options.traits.thinking === "adaptive") {
      body.thinking = { type: "adaptive" };
      body.output_config = { effort: request.reasoning };
    } else {
      body.thinking = {
        type: "enabled",
        budget_tokens: thinkingBudget(request.reasoning, request.maxOutputTokens),
      };
    }
  }
  if (request.output)
    body.output_config = {
      ...body.output_config,
      format: { type: "json_schema", schema: request.output.schema },
    };
  if (request.serviceTier)
    body.service_tier = request.serviceTier === "standard" ? "standard_only" : "auto";
  if (request.cache) applyCacheBreakpoints(body, request.cache, harness);
  return body;
}

const CACHEABLE = new Set(["text", "image", "document", "tool_use", "tool_result"]);

/**
 * Cache breakpoints (seed 001, provider-request-controls), at most three of the four allowed:
 * - the stable prefix: the last system block, or the last tool when there is no system (`ttl`),
 *   never a deferred one (the API refuses `cache_control` with `defer_loading`);
 * - unless `conversationTail` is false, the moving tail: the last cacheable block of the last
 *   message that is not a harness notice or volatile suffix (which only this request carries, so a
 *   write there would never be read), and a rolling mark on the previous request's tail, the last
 *   cacheable block of the message before the last assistant message, so a step that added more
 *   blocks than a breakpoint looks back (about 20) still reads the previous entry. Both `tailTtl`
 *   (default `ttl`); a 1h prefix before 5m tails keeps the ordering rule (longer TTLs first).
 */
export function applyCacheBreakpoints(
  body: RequestBody,
  cache: CacheControls,
  harness: WeakSet<object> = new WeakSet(),
): void {
  const marker = (ttl: CacheTtl): CacheControl => ({ type: "ephemeral", ttl });
  const lastSystem = body.system?.at(-1);
  const lastTool = body.tools?.findLast((t) => !("defer_loading" in t && t.defer_loading));
  if (lastSystem) lastSystem.cache_control = marker(cache.ttl);
  else if (lastTool) lastTool.cache_control = marker(cache.ttl);
  if (cache.conversationTail === false) return;
  const tailTtl = cache.tailTtl ?? cache.ttl;
  const messages = body.messages;
  const tail = lastCacheable(messages.at(-1)?.content, harness);
  if (tail) tail.cache_control = marker(tailTtl);
  let lastAssistant = -1;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    if (messages[i]?.role === "assistant") {
      lastAssistant = i;
      break;
    }
  }
  const previous =
    lastAssistant > 0 ? lastCacheable(messages[lastAssistant - 1]?.content, harness) : undefined;
  if (previous && previous !== tail) previous.cache_control = marker(tailTtl);
}

function lastCacheable(
  content: readonly ContentParam[] | undefined,
  harness: WeakSet<object>,
): { cache_control?: CacheControl } | undefined {
  if (!content) return undefined;
  for (let i = content.length - 1; i >= 0; i -= 1) {
    const block = content[i] as ContentParam;
    if (CACHEABLE.has(block.type) && !harness.has(block))
      return block as { cache_control?: CacheControl };
  }
  return undefined;
}
