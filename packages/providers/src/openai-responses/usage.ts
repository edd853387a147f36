import type { UsageEvidence } from "@alma-harness/core";
import { openaiServedTier, promptCountsEvidence } from "../shared/usage.js";
import type { ResponsesWireUsage } from "./wire.js";

/**
 * Responses usage → evidence: `input_tokens` includes cache reads and writes, so ordinary input is
 * what remains (seed 001, `promptCountsEvidence`). Web searches are not counted in `usage`: the
 * stream's completed `web_search_call` search items are, and only when the request offered the
 * tool (absent otherwise, never a guessed zero).
 */
export function responsesEvidence(
  raw: ResponsesWireUsage | undefined,
  servedTier: unknown,
  webSearches: number | undefined,
): UsageEvidence {
  if (!raw) return { status: "unknown" };
  return promptCountsEvidence(
    {
      prompt: raw.input_tokens,
      output: raw.output_tokens,
      cached: raw.input_tokens_details?.cached_tokens,
      written: raw.input_tokens_details?.cache_write_tokens,
      reasoning: raw.output_tokens_details?.reasoning_tokens,
      webSearches,
    },
    openaiServedTier(servedTier),
  );
}
