import type { UsageEvidence } from "@alma-harness/core";
import { asCount } from "../shared/neutral.js";
import { compactUsage, evidenceOf, openaiServedTier } from "../shared/usage.js";
import type { ResponsesWireUsage } from "./wire.js";

/**
 * Responses usage → evidence: `input_tokens` includes cache reads and writes, so ordinary input is
 * what remains (seed 001). Writes go to the default-TTL slot (`cacheWrite5mTokens`). Web searches
 * are not counted in `usage`: the stream's completed `web_search_call` search items are, and only
 * when the request offered the tool (absent otherwise, never a guessed zero).
 */
export function responsesEvidence(raw: ResponsesWireUsage | undefined, servedTier: unknown, webSearches: number | undefined): UsageEvidence {
  if (!raw) return { status: "unknown" };
  const input = asCount(raw.input_tokens);
  const output = asCount(raw.output_tokens);
  if (input === undefined || output === undefined) return { status: "unknown" };
  const cached = asCount(raw.input_tokens_details?.cached_tokens);
  const written = asCount(raw.input_tokens_details?.cache_write_tokens);
  const tier = openaiServedTier(servedTier);
  const usage = compactUsage({
    inputTokens: input - (cached ?? 0) - (written ?? 0),
    outputTokens: output,
    cacheReadTokens: cached,
    cacheWrite5mTokens: written,
    reasoningTokens: asCount(raw.output_tokens_details?.reasoning_tokens),
    webSearchRequests: webSearches,
    serviceTier: tier.tier,
  });
  return evidenceOf(usage, tier.unresolved);
}
