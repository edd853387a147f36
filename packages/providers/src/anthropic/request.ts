import type { CacheControls, ModelRequest } from "@alma-harness/core";
import { renderText } from "../shared/text.js";
import { toAnthropicMessages } from "./messages.js";
import { type AnthropicModelTraits, thinkingBudget } from "./models.js";
import { toAnthropicToolChoice, toAnthropicTools } from "./tools.js";
import type { CacheControl, ContentParam, RequestBody } from "./wire.js";

export interface BodyOptions {
  readonly traits: AnthropicModelTraits;
  readonly webSearchType: string;
}

/** The exact `/v1/messages` body for a validated neutral request. */
export function buildAnthropicBody(request: ModelRequest, options: BodyOptions): RequestBody {
  const body: RequestBody = {
    model: request.model,
    max_tokens: request.maxOutputTokens,
    messages: toAnthropicMessages(request.messages, request.model),
    stream: true,
  };
  const system = request.system.map((b) => ({ type: "text" as const, text: renderText(b) })).filter((b) => b.text.length > 0);
  if (system.length > 0) body.system = system;
  const tools = toAnthropicTools(request, options.webSearchType);
  if (tools.length > 0) body.tools = tools;
  if (request.toolChoice) body.tool_choice = toAnthropicToolChoice(request.toolChoice);
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.reasoning) {
    if (options.traits.thinking === "adaptive") {
      body.thinking = { type: "adaptive" };
      body.output_config = { effort: request.reasoning };
    } else {
      body.thinking = { type: "enabled", budget_tokens: thinkingBudget(request.reasoning, request.maxOutputTokens) };
    }
  }
  if (request.output) body.output_config = { ...body.output_config, format: { type: "json_schema", schema: request.output.schema } };
  if (request.serviceTier) body.service_tier = request.serviceTier === "standard" ? "standard_only" : "auto";
  if (request.cache) applyCacheBreakpoints(body, request.cache);
  return body;
}

const CACHEABLE = new Set(["text", "image", "document", "tool_use", "tool_result"]);

/**
 * Cache breakpoints (seed 001, provider-request-controls): one on the stable prefix — the last
 * system block, or the last tool when there is no system — and, unless `conversationTail` is
 * false, one on the last cacheable block of the last message, so the next step reads the whole
 * conversation from cache. Two of the four allowed markers, one TTL, so the TTL ordering rule
 * (1h before 5m) always holds.
 */
export function applyCacheBreakpoints(body: RequestBody, cache: CacheControls): void {
  const marker = (): CacheControl => ({ type: "ephemeral", ttl: cache.ttl });
  const lastSystem = body.system?.at(-1);
  const lastTool = body.tools?.at(-1);
  if (lastSystem) lastSystem.cache_control = marker();
  else if (lastTool) lastTool.cache_control = marker();
  if (cache.conversationTail === false) return;
  const tail = body.messages.at(-1)?.content;
  if (!tail) return;
  for (let i = tail.length - 1; i >= 0; i -= 1) {
    const block = tail[i] as ContentParam;
    if (CACHEABLE.has(block.type)) {
      (block as { cache_control?: CacheControl }).cache_control = marker();
      return;
    }
  }
}
