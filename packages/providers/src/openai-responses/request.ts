import { strictEligible } from "../shared/strict.js";
import type { ModelRequest } from "@alma-harness/core";
import { toInputItems, toInstructions } from "./messages.js";
import { nativeSearch } from "./tool-search.js";
import { toResponsesToolChoice, toResponsesTools } from "./tools.js";
import type { ResponsesRequestBody } from "./wire.js";

/** `reasoning.summary`, or `none` for no summary request. */
export type SummaryRequest = "auto" | "concise" | "detailed" | "none";

/**
 * The exact `/v1/responses` body. Always stateless (`store: false`: nothing kept at the provider,
 * history travels in `input`), so a reasoning model is asked for its encrypted reasoning to replay.
 * `nativeLoading`: deferred tools load through OpenAI's tool search where the model supports it.
 */
export function buildResponsesBody(
  request: ModelRequest,
  reasoningModel: boolean,
  summary: SummaryRequest = "auto",
  nativeLoading = true,
): ResponsesRequestBody {
  const native = nativeSearch(request, nativeLoading);
  const body: ResponsesRequestBody = {
    model: request.model,
    input: toInputItems(request.messages, native),
    stream: true,
    store: false,
    max_output_tokens: request.maxOutputTokens,
  };
  const instructions = toInstructions(request.system);
  if (instructions) body.instructions = instructions;
  const tools = toResponsesTools(request, native);
  if (tools.length > 0) body.tools = tools;
  if (request.toolChoice) body.tool_choice = toResponsesToolChoice(request.toolChoice);
  const search = (request.providerTools ?? []).find((p) => p.kind === "web_search");
  if (search?.maxUses !== undefined) body.max_tool_calls = search.maxUses;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.reasoning)
    body.reasoning = { effort: request.reasoning, ...(summary !== "none" ? { summary } : {}) };
  const include = [
    ...(reasoningModel ? ["reasoning.encrypted_content"] : []),
    ...(search ? ["web_search_call.action.sources"] : []),
  ];
  if (include.length > 0) body.include = include;
  // Strict where the schema allows it (the decoder then guarantees the shape); else `strict: false`, checked by the caller.
  if (request.output)
    body.text = {
      format: {
        type: "json_schema",
        name: request.output.name,
        schema: request.output.schema,
        strict: strictEligible(request.output.schema),
      },
    };
  if (request.serviceTier)
    body.service_tier =
      request.serviceTier === "standard" ? "default" : (request.serviceTier as "flex" | "priority");
  return body;
}
