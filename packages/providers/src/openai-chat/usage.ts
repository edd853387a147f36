import type { ServiceTier, UsageEvidence } from "@alma-harness/core";
import { asCount } from "../shared/neutral.js";
import { promptCountsEvidence } from "../shared/usage.js";
import type { ChatWireUsage } from "./wire.js";

/**
 * Chat Completions usage → evidence. `prompt_tokens` includes cache reads (`cached_tokens`) and
 * cache writes (`cache_write_tokens`); ordinary input is what remains (seed 001). OpenAI reports
 * one write TTL, so writes go to `cacheWrite5mTokens`, the provider's default-TTL write slot,
 * priced by the table's `cacheWrite5m` rate. `undefined` usage (the stream ended without the
 * usage chunk) is `unknown`, never zero.
 */
export function chatEvidence(
  raw: ChatWireUsage | undefined,
  tier: { tier?: ServiceTier; unresolved?: string },
): UsageEvidence {
  if (!raw) return { status: "unknown" };
  return promptCountsEvidence(
    {
      prompt: raw.prompt_tokens,
      output: raw.completion_tokens,
      cached: raw.prompt_tokens_details?.cached_tokens,
      written: raw.prompt_tokens_details?.cache_write_tokens,
      reasoning: raw.completion_tokens_details?.reasoning_tokens,
      webSearches: asCount(raw.server_tool_use_details?.web_search_requests),
    },
    tier,
  );
}
