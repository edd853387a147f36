import type { JsonObject, JsonValue } from "@alma-harness/core";

/** OpenAI Responses API wire shapes this adapter writes and reads. */

export type InputContent =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail: "auto" }
  | { type: "input_file"; file_url: string }
  | { type: "input_file"; file_data: string; filename: string };

export type InputItem =
  | { role: "user"; content: InputContent[] }
  | { role: "assistant"; content: string }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string }
  | {
      type: "reasoning";
      id: string;
      encrypted_content: string;
      summary: { type: "summary_text"; text: string }[];
    }
  /** A built-in tool call item (`web_search_call`) replayed as received. */
  | { readonly [key: string]: JsonValue };

export type ResponsesTool =
  | {
      type: "function";
      name: string;
      description: string;
      parameters: JsonObject;
      strict: false;
      defer_loading?: true;
    }
  | { type: "web_search" }
  /** OpenAI's tool search, executed by the client (the engine's `search_tools`). */
  | { type: "tool_search"; execution: "client"; description: string; parameters: JsonObject };

export type ResponsesToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export interface ResponsesRequestBody {
  model: string;
  input: InputItem[];
  instructions?: string;
  stream: true;
  store: false;
  max_output_tokens: number;
  tools?: ResponsesTool[];
  tool_choice?: ResponsesToolChoice;
  max_tool_calls?: number;
  temperature?: number;
  reasoning?: { effort: "low" | "medium" | "high"; summary?: "auto" | "concise" | "detailed" };
  include?: string[];
  text?: { format: { type: "json_schema"; name: string; schema: JsonObject; strict: boolean } };
  service_tier?: "default" | "flex" | "priority";
}

/** `usage` of a completed response. */
export interface ResponsesWireUsage {
  input_tokens?: number;
  input_tokens_details?: {
    cached_tokens?: number | null;
    cache_write_tokens?: number | null;
  } | null;
  output_tokens?: number;
  output_tokens_details?: { reasoning_tokens?: number | null } | null;
}
