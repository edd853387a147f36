import { createOpenAIAdapter, type OpenAIClientOptions } from "../openai-chat/client.js";
import { ValidationError } from "@alma-harness/core";
import type { ProviderClient } from "../shared/types.js";
import { buildResponsesBody } from "./request.js";
import { ResponsesTransform } from "./stream.js";

/**
 * The OpenAI Responses adapter (`POST /v1/responses`, streaming, stateless). Shares the provider
 * tag `openai` with the Chat Completions adapter, so its 429s carry the same rejection proof.
 */
export interface OpenAIResponsesClientOptions extends OpenAIClientOptions {
  /**
   * `reasoning.summary` on reasoning calls: `auto` (default), `concise`, `detailed`, or `none` to
   * send no summary request (an organization that is not verified gets a 400 for any summary).
   */
  readonly reasoningSummary?: ReasoningSummary;
  /**
   * How a request's deferred tools reach the wire. `native` (default): on models with tool search
   * (gpt-5.4 and later), `search_tools` is the client-executed `tool_search` tool, every deferred
   * definition is sent with `defer_loading: true` and a search's loads come back in its
   * `tool_search_output`, so the tools array never changes as tools load (tool-search.ts).
   * `append`: loaded tools are appended after the advertised ones, in load order.
   */
  readonly deferredLoading?: "native" | "append";
}

export type ReasoningSummary = "auto" | "concise" | "detailed" | "none";
const SUMMARIES: readonly ReasoningSummary[] = ["auto", "concise", "detailed", "none"];

export function createOpenAIResponsesClient(
  options: OpenAIResponsesClientOptions = {},
): ProviderClient {
  const summary = options.reasoningSummary ?? "auto";
  if (!SUMMARIES.includes(summary))
    throw new ValidationError(
      "reasoningSummary",
      "closed",
      `reasoningSummary must be one of ${SUMMARIES.join(", ")}`,
    );
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
  const native = options.deferredLoading !== "append";
  return createOpenAIAdapter(options, {
    id: "openai-responses",
    path: "responses",
    responses: true,
    body: (request, reasoning) => buildResponsesBody(request, reasoning, summary, native),
    transform: (request, classify) =>
      new ResponsesTransform(
        classify,
        (request.providerTools ?? []).some((p) => p.kind === "web_search"),
      ),
  });
}
