import { createOpenAIAdapter, type OpenAIClientOptions } from "../openai-chat/client.js";
import type { ProviderClient } from "../shared/types.js";
import { buildResponsesBody } from "./request.js";
import { ResponsesTransform } from "./stream.js";

/**
 * The OpenAI Responses adapter (`POST /v1/responses`, streaming, stateless). Shares the provider
 * tag `openai` with the Chat Completions adapter, so its 429s carry the same rejection proof.
 */
export function createOpenAIResponsesClient(options: OpenAIClientOptions = {}): ProviderClient {
  return createOpenAIAdapter(options, {
    id: "openai-responses",
    path: "responses",
    responses: true,
    body: (request, reasoning) => buildResponsesBody(request, reasoning),
    transform: (request, classify) => new ResponsesTransform(classify, (request.providerTools ?? []).some((p) => p.kind === "web_search")),
  });
}
