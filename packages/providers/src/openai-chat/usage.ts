import type { ServiceTier, UsageEvidence } from "@alma-harness/core";
import { asCount } from "../shared/neutral.js";
import { compactUsage, evidenceOf } from "../shared/usage.js";
import type { ChatWireUsage } from "./wire.js";

/**
 * Chat Completions usage → evidence. `prompt_tokens` includes cache reads (`cached_tokens`) and
 * cache writes (`cache_write_tokens`); ordinary input is what remains (seed 001). OpenAI reports
 * one write TTL, so writes go to `cacheWrite5mTokens`, the provider's default-TTL write slot,
 * priced by the table's `cacheWrite5m` rate. `undefined` usage (the stream ended without the
 * usage chunk) is `unknown`, never zero.
 */
export function chatEvidence(raw: ChatWireUsage | undefined, tier: { tier?: ServiceTier; unresolved?: string }): UsageEvidence {
  if (!raw) return { status: "unknown" };
  const prompt = asCount(raw.prompt_tokens);
  const output = asCount(raw.completion_tokens);
  if (prompt === undefined || output === undefined) return { status: "unknown" };
  const cached = asCount(raw.prompt_tokens_details?.cached_tokens);
  const written = asCount(raw.prompt_tokens_details?.cache_write_tokens);
  const usage = compactUsage({
    inputTokens: prompt - (cached ?? 0) - (written ?? 0),
    outputTokens: output,
    cacheReadTokens: cached,
    cacheWrite5mTokens: written,
    reasoningTokens: asCount(raw.completion_tokens_details?.reasoning_tokens),
    webSearchRequests: asCount(raw.server_tool_use_details?.web_search_requests),
    serviceTier: tier.tier,
  });
  return evidenceOf(usage, tier.unresolved);
}
