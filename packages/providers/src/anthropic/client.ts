import {
  type ModelRequest,
  type ProviderError,
  type RejectionProof,
  TOOL_NAME,
  ValidationError,
} from "@alma-harness/core";
import { createProviderClient } from "../shared/client.js";
import {
  baseKind,
  type Classified,
  type ErrorFacts,
  toProviderError,
  unsupported,
} from "../shared/errors.js";
import { joinUrl } from "../shared/http.js";
import { IMAGE_TYPES, mediaSource } from "../shared/media.js";
import type { BaseClientOptions, ProviderClient } from "../shared/types.js";
import { type Capabilities, validateCommon } from "../shared/validate.js";
import { ANTHROPIC_PROVIDER } from "./messages.js";
import {
  type AnthropicModelTraits,
  defaultAnthropicTraits,
  MIN_THINKING_BUDGET,
} from "./models.js";
import { buildAnthropicBody } from "./request.js";
import { AnthropicTransform } from "./stream.js";
import { DEFAULT_WEB_SEARCH_TOOL } from "./tools.js";
import { ANTHROPIC_VERSION } from "./wire.js";

export interface AnthropicClientOptions extends BaseClientOptions {
  /** `anthropic-beta` flags, sent comma-joined. */
  readonly betas?: readonly string[];
  /** Per-model overrides of the generation rules (thinking form, temperature, forced tools). */
  readonly models?: (model: string) => Partial<AnthropicModelTraits> | undefined;
  /** The server web search tool `type`; default `web_search_20250305`. */
  readonly webSearchToolType?: string;
  /**
   * How a request's deferred tools reach the wire. `native` (default): on models with tool search
   * (trait `toolSearch`), every deferred definition is sent with `defer_loading: true` and a
   * search's loads as `tool_reference` blocks, so the tools array never changes as tools load.
   * `append`: only loaded tools are sent, appended after the advertised ones (the loop's order).
   */
  readonly deferredLoading?: "native" | "append";
}

export const DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com/v1";

/** The headers of every Anthropic API call: the API version, the host's own, the key and the betas. */
export function anthropicHeaders(
  options: Pick<AnthropicClientOptions, "headers" | "apiKey" | "betas">,
): Record<string, string> {
  const headers: Record<string, string> = {
    "anthropic-version": ANTHROPIC_VERSION,
    ...options.headers,
  };
  if (options.apiKey) headers["x-api-key"] = options.apiKey;
  if (options.betas && options.betas.length > 0)
    headers["anthropic-beta"] = options.betas.join(",");
  return headers;
}

/**
 * The Anthropic Messages adapter (`POST /v1/messages`, streaming, `anthropic-version` pinned to
 * 2023-06-01). The only adapter that honors explicit cache controls.
 */
export function createAnthropicClient(options: AnthropicClientOptions = {}): ProviderClient {
  const traitsOf = (model: string): AnthropicModelTraits => ({
    ...defaultAnthropicTraits(model),
    ...options.models?.(model),
  });
  const webSearchType = options.webSearchToolType ?? DEFAULT_WEB_SEARCH_TOOL;
  if (
    options.deferredLoading !== undefined &&
    options.deferredLoading !== "native" &&
    options.deferredLoading !== "append"
  ) {
    throw new ValidationError(
      "deferredLoading",
      "closed",
      "deferredLoading must be native or append",
    );
  }
  const nativeDeferred = options.deferredLoading !== "append";
  const headers = anthropicHeaders(options);
  const url = joinUrl(options.baseURL ?? DEFAULT_ANTHROPIC_BASE_URL, "messages");
  return createProviderClient({
    id: options.id ?? "anthropic",
    provider: ANTHROPIC_PROVIDER,
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    requestIdHeaders: ["request-id", "x-request-id"],
    validate: (request) => validateAnthropic(request, traitsOf(request.model)),
    prepare: (request) => ({
      url,
      headers,
      body: buildAnthropicBody(request, {
        traits: traitsOf(request.model),
        webSearchType,
        nativeDeferred,
      }),
    }),
    // One requested duration lets writes without the 5m/1h split be attributed; two (a tail of its own) cannot.
    transform: (request) =>
      new AnthropicTransform(
        classifyAnthropic,
        request.cache && (request.cache.tailTtl ?? request.cache.ttl) === request.cache.ttl
          ? request.cache.ttl
          : undefined,
      ),
    classify: classifyAnthropic,
  });
}

function capabilities(traits: AnthropicModelTraits): Capabilities {
  return {
    tools: true,
    webSearch: true,
    output: traits.structuredOutput,
    reasoning: true,
    cache: true,
    serviceTiers: new Set(["standard", "priority"]),
    images: { url: true, base64: true, types: IMAGE_TYPES },
    documents: { url: true, base64: true, types: new Set(["application/pdf", "text/plain"]) },
    temperature: () => traits.temperature,
  };
}

function validateAnthropic(request: ModelRequest, traits: AnthropicModelTraits): void {
  const fail = (message: string) => unsupported(ANTHROPIC_PROVIDER, message);
  validateCommon(ANTHROPIC_PROVIDER, request, capabilities(traits));
  const forced = request.toolChoice?.type === "required" || request.toolChoice?.type === "tool";
  if (forced && !traits.forcedToolChoice) throw fail(`${request.model} refuses forced tool use`);
  if (request.reasoning) {
    if (forced) throw fail("thinking cannot be combined with a forced tool choice");
    if (request.temperature !== undefined && request.temperature !== 1)
      throw fail("thinking requires the default temperature");
    if (traits.thinking === "budget" && request.maxOutputTokens <= MIN_THINKING_BUDGET) {
      throw fail(`thinking needs maxOutputTokens above ${MIN_THINKING_BUDGET}`);
    }
  }
  // The deferred definitions go on the wire when loading natively: each a valid, distinct name.
  const deferred = new Set<string>();
  for (const spec of request.deferredToolSpecs ?? []) {
    if (typeof spec.name !== "string" || !TOOL_NAME.test(spec.name))
      throw fail(`invalid deferred tool name ${JSON.stringify(spec.name)}`);
    if (deferred.has(spec.name)) throw fail(`deferred tool "${spec.name}" is listed twice`);
    deferred.add(spec.name);
  }
  for (const msg of request.messages) {
    for (const block of msg.blocks) {
      if (
        block.type === "media" &&
        block.contentType === "text/plain" &&
        mediaSource(block)?.kind === "url"
      ) {
        throw fail("a text/plain document must be sent as bytes, not by URL");
      }
    }
  }
}

/**
 * HTTP 429 and 529 (and `overloaded_error` as the first stream event) are the two pre-stream
 * refusals Anthropic attests with a `RejectionProof` when nothing streamed. A 429 for the
 * organization's spend limit is not a rate limit to wait out: not retryable, no proof.
 */
export function classifyAnthropic(facts: ErrorFacts): ProviderError {
  const kind = baseKind(facts);
  let classified: Classified = { kind };
  if (kind === "rate_limited" && facts.detail === "enforced_spend_limit_reached")
    classified = { kind, retryable: false };
  else if (facts.pristine && (kind === "rate_limited" || kind === "overloaded")) {
    const rejection: RejectionProof =
      kind === "rate_limited"
        ? {
            kind: "anthropic_rate_limit_v1",
            provider: ANTHROPIC_PROVIDER,
            status: facts.status ?? 429,
          }
        : {
            kind: "anthropic_overloaded_v1",
            provider: ANTHROPIC_PROVIDER,
            status: facts.status ?? 529,
          };
    classified = { kind, rejection };
  }
  return toProviderError(facts, classified);
}
