import { ValidationError } from "@alma-harness/core";
import { createChatAdapter, fallbackCallId } from "../openai-chat/client.js";
import { buildChatBody } from "../openai-chat/request.js";
import { ChatTransform, plainReasoning } from "../openai-chat/stream.js";
import { baseKind, type ErrorFacts, toProviderError } from "../shared/errors.js";
import { joinUrl } from "../shared/http.js";
import type { BaseClientOptions, ProviderClient } from "../shared/types.js";
import { type OpenAICompatibleCapabilities, compatCapabilities } from "./capabilities.js";

export interface OpenAICompatibleClientOptions extends BaseClientOptions {
  /** The server's OpenAI base URL, e.g. `http://127.0.0.1:8000/v1` (vLLM) or `http://localhost:11434/v1` (Ollama). */
  readonly baseURL: string;
  /** The provider tag on errors, blocks and traces; default `openai-compatible`. */
  readonly provider?: string;
  readonly capabilities?: OpenAICompatibleCapabilities;
}

export const COMPAT_PROVIDER = "openai-compatible";
const RESERVED = new Set(["openai", "anthropic", "openrouter"]);

/**
 * Chat Completions at any base URL, with an optional key (`Authorization: Bearer`), for local and
 * self-hosted servers. Capabilities are declared, never probed. Its refusals carry no
 * `RejectionProof`: only the named providers can attest one.
 */
export function createOpenAICompatibleClient(
  options: OpenAICompatibleClientOptions,
): ProviderClient {
  if (typeof options?.baseURL !== "string" || !/^https?:\/\//i.test(options.baseURL)) {
    throw new ValidationError(
      "baseURL",
      "url",
      "an OpenAI-compatible client needs an http(s) baseURL",
    );
  }
  const provider = options.provider ?? COMPAT_PROVIDER;
  if (RESERVED.has(provider))
    throw new ValidationError("provider", "reserved", `"${provider}" names a dedicated adapter`);
  const declared = options.capabilities ?? {};
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const classify = (facts: ErrorFacts) => toProviderError(facts, { kind: baseKind(facts) });
  const caps = compatCapabilities(declared);
  return createChatAdapter({
    id: options.id ?? provider,
    provider,
    url: joinUrl(options.baseURL, "chat/completions"),
    headers,
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    requestIdHeaders: ["x-request-id"],
    capabilities: () => caps,
    body(request) {
      const body = buildChatBody(request, {
        maxTokensField: declared.maxTokensField ?? "max_tokens",
        streamUsage: declared.streamUsage === true,
      });
      if (request.reasoning) body.reasoning_effort = request.reasoning;
      return body;
    },
    transform: () =>
      new ChatTransform({
        provider,
        classify,
        reasoning: plainReasoning(),
        servedTier: () => ({}),
        callId: fallbackCallId,
      }),
    classify,
  });
}
