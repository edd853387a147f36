import type { JsonObject, JsonValue } from "@alma-harness/core";

/** Anthropic Messages API wire shapes this adapter writes and reads (API version 2023-06-01). */

export const ANTHROPIC_VERSION = "2023-06-01";

export interface CacheControl {
  type: "ephemeral";
  ttl: "5m" | "1h";
}

export type Source =
  | { type: "base64"; media_type: string; data: string }
  | { type: "url"; url: string }
  | { type: "text"; media_type: "text/plain"; data: string };

export type ContentParam =
  | { type: "text"; text: string; cache_control?: CacheControl }
  | { type: "image"; source: Source; cache_control?: CacheControl }
  | { type: "document"; source: Source; cache_control?: CacheControl }
  | { type: "tool_use"; id: string; name: string; input: JsonObject; cache_control?: CacheControl }
  | {
      type: "tool_result";
      tool_use_id: string;
      content: string | ToolResultContent[];
      is_error: boolean;
      cache_control?: CacheControl;
    }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | VerbatimBlock;

/** What a `tool_result` carries as an array: its text, then `tool_reference` blocks that load deferred tools (tool-search-tool, "Custom tool search implementation"). */
export type ToolResultContent =
  | { type: "text"; text: string }
  | { type: "tool_reference"; tool_name: string };

/** Server tool blocks (`server_tool_use`, `web_search_tool_result`), replayed as received. */
export interface VerbatimBlock {
  type: string;
  cache_control?: CacheControl;
  [key: string]: JsonValue | CacheControl | undefined;
}

export interface MessageParam {
  role: "user" | "assistant";
  content: ContentParam[];
}

export type ToolParam =
  | {
      name: string;
      description: string;
      input_schema: JsonObject;
      defer_loading?: true;
      cache_control?: CacheControl;
    }
  | { type: string; name: "web_search"; max_uses?: number; cache_control?: CacheControl };

export type ToolChoiceParam =
  | { type: "auto" }
  | { type: "any" }
  | { type: "none" }
  | { type: "tool"; name: string };

export type ThinkingParam = { type: "enabled"; budget_tokens: number } | { type: "adaptive" };

export interface OutputConfig {
  effort?: "low" | "medium" | "high";
  format?: { type: "json_schema"; schema: JsonObject };
}

export interface RequestBody {
  model: string;
  max_tokens: number;
  system?: { type: "text"; text: string; cache_control?: CacheControl }[];
  messages: MessageParam[];
  tools?: ToolParam[];
  tool_choice?: ToolChoiceParam;
  temperature?: number;
  thinking?: ThinkingParam;
  output_config?: OutputConfig;
  service_tier?: "auto" | "standard_only";
  stream: true;
}

/** Usage as it appears in `message_start.message.usage` and `message_delta.usage`. */
export interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation?: {
    ephemeral_5m_input_tokens?: number | null;
    ephemeral_1h_input_tokens?: number | null;
  } | null;
  output_tokens_details?: { thinking_tokens?: number | null } | null;
  server_tool_use?: {
    web_search_requests?: number | null;
    web_fetch_requests?: number | null;
  } | null;
  service_tier?: string | null;
  inference_geo?: string | null;
}
