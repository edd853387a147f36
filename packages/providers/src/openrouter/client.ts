import type { ModelRequest, PriceTable, ProviderError, UsageEvidence } from "@alma-harness/core";
import { createChatAdapter, fallbackCallId } from "../openai-chat/client.js";
import { buildChatBody } from "../openai-chat/request.js";
import { ChatTransform } from "../openai-chat/stream.js";
import { baseKind, type ErrorFacts, toProviderError } from "../shared/errors.js";
import { joinUrl } from "../shared/http.js";
import { IMAGE_TYPES } from "../shared/media.js";
import type { BaseClientOptions, ProviderClient } from "../shared/types.js";
import { openaiServedTier } from "../shared/usage.js";
import { reasoningDetailsExtra } from "./messages.js";
import { OPENROUTER_PROVIDER } from "./provider.js";
import {
  normalizePreferences,
  type OpenRouterRouting,
  preferencesFor,
  upstreamSlug,
} from "./routing.js";
import { openRouterReasoning } from "./stream.js";
import { toOpenRouterTools } from "./tools.js";
import { crossCheckCost } from "./usage.js";
import { OPENROUTER_PRICES } from "../prices/openrouter.js";

export interface OpenRouterClientOptions extends BaseClientOptions {
  /** Sent as `HTTP-Referer` for OpenRouter's app attribution. */
  readonly appUrl?: string;
  /** Sent as `X-Title`. */
  readonly appName?: string;
  /**
   * Where OpenRouter may send prompts (`provider`: `zdr`, `data_collection`, `order`, `only`,
   * `ignore`, `allow_fallbacks`, `require_parameters`): one object for every call, or a function
   * of the call's model and sensitivity. Required (with `zdr: true` or `data_collection: "deny"`)
   * for any call above `internal` sensitivity, which is refused before I/O otherwise.
   */
  readonly providerRouting?: OpenRouterRouting;
  /** The table `usage.cost` is checked against: the one the host's policy prices with (default `OPENROUTER_PRICES`). */
  readonly prices?: PriceTable;
}

export const DEFAULT_OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1";

/**
 * OpenRouter: 402 (credits) is retryable only when it says when (`Retry-After`, the in-flight
 * budget case); an `error` chunk inside a 200 stream is classified by its code like a status.
 * OpenRouter is not one of the providers a `RejectionProof` may come from.
 */
export function classifyOpenRouter(facts: ErrorFacts): ProviderError {
  // 403 is also OpenRouter's answer to input its moderation or a guardrail flagged: a refusal of
  // the content, not a bad key (openrouter.ai/docs/api/reference/errors-and-debugging).
  if (
    facts.status === 403 &&
    (facts.flagged === true || /moderation|flagged|guardrail/i.test(facts.message))
  ) {
    return toProviderError(facts, { kind: "invalid_request", retryable: false });
  }
  // 503 "no available model provider that meets your routing requirements": the same request
  // under the same constraints cannot succeed.
  if (
    facts.status === 503 &&
    /routing requirements|no (available )?(model )?provider/i.test(facts.message)
  ) {
    return toProviderError(facts, { kind: "invalid_request", retryable: false });
  }
  if (facts.status === 402) {
    return facts.retryAfterMs !== undefined
      ? toProviderError(facts, { kind: "rate_limited", retryable: true })
      : toProviderError(facts, { kind: "invalid_request", retryable: false });
  }
  return toProviderError(facts, { kind: baseKind(facts) });
}

/** The OpenRouter adapter: Chat Completions at `openrouter.ai/api/v1` with OpenRouter's fields. */
export function createOpenRouterClient(options: OpenRouterClientOptions = {}): ProviderClient {
  const prices = options.prices ?? OPENROUTER_PRICES;
  const routing =
    typeof options.providerRouting === "function" || options.providerRouting === undefined
      ? options.providerRouting
      : normalizePreferences(options.providerRouting);
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  if (options.appUrl) headers["http-referer"] = options.appUrl;
  if (options.appName) headers["x-title"] = options.appName;
  return createChatAdapter({
    id: options.id ?? "openrouter",
    provider: OPENROUTER_PROVIDER,
    url: joinUrl(options.baseURL ?? DEFAULT_OPENROUTER_BASE_URL, "chat/completions"),
    headers,
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    requestIdHeaders: ["x-generation-id", "x-request-id"],
    capabilities: () => ({
      tools: true,
      webSearch: true,
      output: true,
      reasoning: true,
      cache: false,
      serviceTiers: new Set(["standard"]),
      images: { url: true, base64: true, types: IMAGE_TYPES },
      documents: { url: false, base64: true, types: new Set(["application/pdf"]) },
      temperature: () => "any",
    }),
    validateMore: (request: ModelRequest) => {
      preferencesFor(routing, request);
    },
    body: (request: ModelRequest) => {
      const body = buildChatBody(request, {
        maxTokensField: "max_completion_tokens",
        streamUsage: true,
        assistantExtras: reasoningDetailsExtra(request.model),
      });
      const tools = toOpenRouterTools(request);
      if (tools.length > 0) body.tools = tools as unknown as typeof body.tools;
      if (request.reasoning) body.reasoning = { effort: request.reasoning };
      const prefs = preferencesFor(routing, request);
      if (prefs && Object.keys(prefs).length > 0) body.provider = prefs;
      return body;
    },
    transform: (request: ModelRequest) =>
      new ChatTransform({
        provider: OPENROUTER_PROVIDER,
        classify: classifyOpenRouter,
        reasoning: openRouterReasoning(),
        servedTier: openaiServedTier,
        callId: fallbackCallId,
        upstream: (chunk) => upstreamSlug(chunk.provider),
        refine: (evidence, seen) =>
          crossCheckCost(withUpstream(evidence, seen.upstream), seen.usage, request.model, prices),
      }),
    classify: classifyOpenRouter,
  });
}

/** The serving upstream on counted evidence. */
function withUpstream(evidence: UsageEvidence, upstream: string | undefined): UsageEvidence {
  if (upstream === undefined || (evidence.status !== "known" && evidence.status !== "unpriced"))
    return evidence;
  return { ...evidence, upstream };
}
