import type { PriceTable } from "@alma-harness/core";

/**
 * OpenRouter passes its upstreams' list prices through per model (https://openrouter.ai/models);
 * `usage.cost` reports the charge of each call. Each row below reproduces the `cost` OpenRouter
 * reported on a recorded call (`shared/fixtures/providers/openrouter/`, checked in the tests), so a
 * drift shows up as a failing test, not a wrong bill. OpenRouter reports one cache-write count;
 * it is the upstream's default (5-minute) write. Models not listed are unpriced.
 */
export const OPENROUTER_PRICE_VERSION = "openrouter-2026-11-29";

export const OPENROUTER_PRICES: PriceTable = {
  version: OPENROUTER_PRICE_VERSION,
  models: {
    // Anthropic list price $3 / $15, writes $3.75 (5m) / $6 (1h), hits $0.30; matches the recorded
    // cost of test_openrouter_streaming_reasoning.yaml (2025-12-08). The 1M-context model keeps
    // Anthropic's >200K-token prompt band (OpenRouter's model page prices by prompt size, as the
    // project's own claude-sonnet-4-5 row does): $6 / $22.50, writes $7.50 / $12, hits $0.60.
    "anthropic/claude-sonnet-4.5": {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
      bands: [
        {
          aboveInputTokens: 200_000,
          rates: { input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 },
        },
      ],
    },
    // Same rates; matches both recorded costs of test_openrouter_cache_messages_anthropic_real_api.yaml (2026).
    "anthropic/claude-sonnet-4.6": {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
    },
    // OpenAI list price $0.40 / $1.60, cached $0.10; a web search $0.01 (test_openrouter_web_search_tool_usage_stream.yaml, 2026-08-11).
    "openai/gpt-4.1-mini": {
      rates: { input: 0.4, output: 1.6, cacheRead: 0.1 },
      webSearchPerRequestUsd: 0.01,
    },
    // OpenAI list price $0.25 / $2, cached $0.025 (test_openrouter_usage.yaml).
    "openai/gpt-5-mini": { rates: { input: 0.25, output: 2, cacheRead: 0.025 } },
  },
};
