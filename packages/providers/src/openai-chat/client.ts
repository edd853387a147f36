import type { ModelRequest, ProviderError } from "@alma-harness/core";
import { type AdapterSpec, createProviderClient, type WireRequest } from "../shared/client.js";
import {
  baseKind,
  type Classified,
  type ErrorFacts,
  toProviderError,
  unsupported,
} from "../shared/errors.js";
import { joinUrl } from "../shared/http.js";
import { IMAGE_TYPES } from "../shared/media.js";
import type { StreamTransform } from "../shared/neutral.js";
import type { BaseClientOptions, ProviderClient } from "../shared/types.js";
import { openaiServedTier } from "../shared/usage.js";
import { type Capabilities, validateCommon } from "../shared/validate.js";
import { buildChatBody } from "./request.js";
import { ChatTransform, plainReasoning } from "./stream.js";

export const OPENAI_PROVIDER = "openai";
export const DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1";

export interface OpenAIClientOptions extends BaseClientOptions {
  readonly organization?: string;
  readonly project?: string;
  /** Which models reason (accept `reasoning_effort`, refuse temperatures other than 1). */
  readonly reasoningModels?: (model: string) => boolean;
}

/** o-series and GPT-5 family models reason; `gpt-5*-chat` variants do not. */
export function defaultReasoningModel(model: string): boolean {
  return /^(o\d|gpt-5)/.test(model) && !/^gpt-5(\.\d+)?-chat/.test(model);
}

/** What `prompt_cache_key` may be: a short opaque token (never an id a person could be found by). */
const CACHE_KEY = /^[A-Za-z0-9._:-]{1,64}$/;

/** The JSON-schema `name` Chat Completions and Responses accept. */
export const SCHEMA_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function openaiHeaders(options: OpenAIClientOptions): Record<string, string> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  if (options.organization) headers["openai-organization"] = options.organization;
  if (options.project) headers["openai-project"] = options.project;
  return headers;
}

/**
 * OpenAI's classification: a 429 `insufficient_quota` is an empty account, not a rate limit to
 * wait out (not retryable, no proof); any other 429 before anything streamed carries the
 * `openai_rate_limit_v1` proof (only for the `openai` provider, never the batch tier).
 */
export function classifyOpenAI(facts: ErrorFacts, provider = OPENAI_PROVIDER): ProviderError {
  const quota = facts.type === "insufficient_quota" || facts.code === "insufficient_quota";
  const kind = quota ? "rate_limited" : baseKind(facts);
  let classified: Classified = { kind };
  if (quota) classified = { kind, retryable: false };
  else if (kind === "rate_limited" && facts.pristine && provider === OPENAI_PROVIDER) {
    classified = {
      kind,
      rejection: { kind: "openai_rate_limit_v1", provider, status: facts.status ?? 429 },
    };
  }
  return toProviderError(facts, classified);
}

/** What a Chat Completions dialect (OpenAI, OpenRouter, a compatible server) plugs in. */
export interface ChatAdapterConfig
  extends Pick<
    AdapterSpec,
    "id" | "provider" | "fetch" | "now" | "requestIdHeaders" | "transform" | "classify"
  > {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  capabilities(model: string): Capabilities;
  body(request: ModelRequest): unknown;
  /** Checks beyond the shared ones. */
  validateMore?(request: ModelRequest): void;
}

export function createChatAdapter(config: ChatAdapterConfig): ProviderClient {
  const { id, provider, fetch, now, requestIdHeaders } = config;
  return createProviderClient({
    id,
    provider,
    fetch,
    now,
    requestIdHeaders,
    validate(request) {
      validateCommon(provider, request, config.capabilities(request.model));
      if (request.output && !SCHEMA_NAME.test(request.output.name)) {
        throw unsupported(provider, "output.name must be 1-64 characters of [A-Za-z0-9_-]");
      }
      config.validateMore?.(request);
    },
    prepare: (request): WireRequest => ({
      url: config.url,
      headers: config.headers,
      body: config.body(request),
    }),
    transform: (request) => config.transform(request),
    classify: (facts) => config.classify(facts),
  });
}

/** What one OpenAI API (Chat Completions, Responses) adds to the parts both share. */
export interface OpenAIApi {
  /** The client id when the options name none. */
  readonly id: string;
  /** The endpoint, below the base URL. */
  readonly path: string;
  /** The Responses API (web search, documents by URL). */
  readonly responses: boolean;
  body(request: ModelRequest, reasoning: boolean): unknown;
  transform(request: ModelRequest, classify: (facts: ErrorFacts) => ProviderError): StreamTransform;
}

/** An OpenAI adapter: the base URL, headers, transport, capabilities and classification both APIs share. */
export function createOpenAIAdapter(options: OpenAIClientOptions, api: OpenAIApi): ProviderClient {
  const reasons = options.reasoningModels ?? defaultReasoningModel;
  const classify = (facts: ErrorFacts) => classifyOpenAI(facts);
  return createChatAdapter({
    id: options.id ?? api.id,
    provider: OPENAI_PROVIDER,
    url: joinUrl(options.baseURL ?? DEFAULT_OPENAI_BASE_URL, api.path),
    headers: openaiHeaders(options),
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    requestIdHeaders: ["x-request-id"],
    capabilities: (model) => openaiCapabilities(reasons(model), api.responses),
    validateMore: (request) => {
      if (request.cacheKey !== undefined && !CACHE_KEY.test(request.cacheKey))
        throw unsupported(OPENAI_PROVIDER, "cacheKey must be 1-64 characters of [A-Za-z0-9._:-]");
    },
    // A scoped, pseudonymous key routes requests that share a prefix to the same cache (prompt-caching guide).
    body: (request) => {
      const body = api.body(request, reasons(request.model)) as Record<string, unknown>;
      return request.cacheKey !== undefined
        ? { ...body, prompt_cache_key: request.cacheKey }
        : body;
    },
    transform: (request) => api.transform(request, classify),
    classify,
  });
}

/** Ids for calls a server streamed without one: unique per completion, stable for a replay. */
export function fallbackCallId(completionId: string | undefined, position: number): string {
  return `call_${completionId ?? globalThis.crypto.randomUUID()}_${position}`;
}

/** The OpenAI Chat Completions adapter (`POST /v1/chat/completions`, streaming). */
export function createOpenAIChatClient(options: OpenAIClientOptions = {}): ProviderClient {
  return createOpenAIAdapter(options, {
    id: "openai",
    path: "chat/completions",
    responses: false,
    body(request) {
      const body = buildChatBody(request, {
        maxTokensField: "max_completion_tokens",
        streamUsage: true,
      });
      if (request.reasoning) body.reasoning_effort = request.reasoning;
      if (request.serviceTier)
        body.service_tier =
          request.serviceTier === "standard"
            ? "default"
            : (request.serviceTier as "flex" | "priority");
      return body;
    },
    transform: (_request, classify) =>
      new ChatTransform({
        provider: OPENAI_PROVIDER,
        classify,
        reasoning: plainReasoning(),
        servedTier: openaiServedTier,
        callId: fallbackCallId,
      }),
  });
}

/** OpenAI's capabilities for a model; the Responses API adds web search and documents by URL. */
export function openaiCapabilities(reasoning: boolean, responses: boolean): Capabilities {
  return {
    tools: true,
    webSearch: responses,
    output: true,
    reasoning,
    cache: false,
    serviceTiers: new Set(["standard", "flex", "priority"]),
    images: { url: true, base64: true, types: IMAGE_TYPES },
    documents: { url: responses, base64: true, types: new Set(["application/pdf"]) },
    temperature: () => (reasoning ? "one" : "any"),
  };
}
