import { classifyOpenAI, createChatAdapter, DEFAULT_OPENAI_BASE_URL, defaultReasoningModel, OPENAI_PROVIDER, type OpenAIClientOptions, openaiCapabilities, openaiHeaders } from "../openai-chat/client.js";
import type { ErrorFacts } from "../shared/errors.js";
import { joinUrl } from "../shared/http.js";
import type { ProviderClient } from "../shared/types.js";
import { buildResponsesBody } from "./request.js";
import { ResponsesTransform } from "./stream.js";

/**
 * The OpenAI Responses adapter (`POST /v1/responses`, streaming, stateless). Shares the provider
 * tag `openai` with the Chat Completions adapter, so its 429s carry the same rejection proof.
 */
export function createOpenAIResponsesClient(options: OpenAIClientOptions = {}): ProviderClient {
  const reasons = options.reasoningModels ?? defaultReasoningModel;
  const classify = (facts: ErrorFacts) => classifyOpenAI(facts);
  return createChatAdapter({
    id: options.id ?? "openai-responses",
    provider: OPENAI_PROVIDER,
    url: joinUrl(options.baseURL ?? DEFAULT_OPENAI_BASE_URL, "responses"),
    headers: openaiHeaders(options),
    fetch: options.fetch ?? globalThis.fetch,
    now: options.now ?? Date.now,
    requestIdHeaders: ["x-request-id"],
    capabilities: (model) => openaiCapabilities(reasons(model), true),
    body: (request) => buildResponsesBody(request, reasons(request.model)),
    transform: (request) => new ResponsesTransform(classify, (request.providerTools ?? []).some((p) => p.kind === "web_search")),
    classify,
  });
}
