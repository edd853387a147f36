import type { JsonObject } from "@alma-harness/core";
import type { OpenRouterProviderPreferences } from "./routing.js";

/** OpenRouter's additions to the Chat Completions wire. */

/** One `reasoning_details` item as streamed; items of one `index` and `type` are one block. */
export interface ReasoningDetail {
  type: string;
  index?: number;
  format?: string | null;
  text?: string;
  summary?: string;
  signature?: string;
  data?: string;
  id?: string;
  [key: string]: unknown;
}

export interface OpenRouterWebSearchTool {
  type: "openrouter:web_search";
  parameters?: { max_uses: number };
}

export interface OpenRouterBodyExtras {
  reasoning?: { effort: "low" | "medium" | "high" };
  provider?: OpenRouterProviderPreferences;
  tools?: (JsonObject | OpenRouterWebSearchTool)[];
}
