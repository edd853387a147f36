import { strictEligible } from "../shared/strict.js";
import type { ModelRequest } from "@alma-harness/core";
import { type AssistantExtras, toChatMessages } from "./messages.js";
import { toChatToolChoice, toChatTools } from "./tools.js";
import type { ChatRequestBody } from "./wire.js";

export interface ChatBodyOptions {
  /** `max_completion_tokens` (OpenAI, OpenRouter) or the older `max_tokens` (most local servers). */
  readonly maxTokensField: "max_completion_tokens" | "max_tokens";
  /** Ask for the trailing usage chunk (`stream_options.include_usage`). */
  readonly streamUsage: boolean;
  readonly assistantExtras?: AssistantExtras;
}

/** The Chat Completions body every dialect shares; dialects add their own fields after. */
export function buildChatBody(request: ModelRequest, options: ChatBodyOptions): ChatRequestBody {
  const body: ChatRequestBody = {
    model: request.model,
    messages: toChatMessages(request.system, request.messages, options.assistantExtras),
    stream: true,
  };
  if (options.streamUsage) body.stream_options = { include_usage: true };
  body[options.maxTokensField] = request.maxOutputTokens;
  const tools = toChatTools(request);
  if (tools.length > 0) body.tools = tools;
  if (request.toolChoice) body.tool_choice = toChatToolChoice(request.toolChoice);
  if (request.temperature !== undefined) body.temperature = request.temperature;
  // Strict where the schema allows it (the decoder then guarantees the shape); else `strict: false`, checked by the caller.
  if (request.output) {
    // Explicit either way: some OpenRouter routes read an omitted flag as strict.
    body.response_format = {
      type: "json_schema",
      json_schema: {
        name: request.output.name,
        schema: request.output.schema,
        strict: strictEligible(request.output.schema),
      },
    };
  }
  return body;
}
