import type { JsonObject, JsonValue } from "@alma-harness/core";

/** OpenAI Chat Completions wire shapes (also spoken by OpenRouter and OpenAI-compatible servers). */

export type ChatContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } }
  | { type: "file"; file: { file_data: string; filename: string } };

export interface ChatToolCallParam {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ChatContentPart[] }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: ChatToolCallParam[];
      [extra: string]: JsonValue | ChatToolCallParam[] | undefined;
    }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatTool {
  type: "function";
  function: { name: string; description: string; parameters: JsonObject; strict?: boolean };
}

export type ChatToolChoice =
  | "auto"
  | "none"
  | "required"
  | { type: "function"; function: { name: string } };

export interface ChatRequestBody {
  model: string;
  messages: ChatMessage[];
  stream: true;
  stream_options?: { include_usage: true };
  max_completion_tokens?: number;
  max_tokens?: number;
  tools?: (ChatTool | JsonObject)[];
  tool_choice?: ChatToolChoice;
  temperature?: number;
  response_format?: {
    type: "json_schema";
    json_schema: { name: string; schema: JsonObject; strict: boolean };
  };
  reasoning_effort?: "low" | "medium" | "high";
  service_tier?: "default" | "flex" | "priority";
  [extra: string]: unknown;
}

/** `usage` of a chunk (Chat Completions, with OpenRouter's additions). */
export interface ChatWireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: {
    cached_tokens?: number | null;
    cache_write_tokens?: number | null;
  } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  server_tool_use_details?: { web_search_requests?: number | null } | null;
  /** OpenRouter: the charge of the call in USD credits; with `is_byok`, OpenRouter's fee only. */
  cost?: number;
  is_byok?: boolean;
}
