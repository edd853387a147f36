import type { ModelPrice, PriceTable, Rates } from "@alma-harness/core";

/**
 * Anthropic list prices, USD per million tokens, standard tier, Claude API (not Bedrock/Vertex).
 * Multipliers on the pricing page: 5-minute cache write 1.25× input, 1-hour write 2×, cache hit
 * 0.1× (several 2026 models read cheaper; their rows say so). Batch: 50% off every term (the
 * discount stacks with caching). Priority Tier is sold by commitment with no public rate: no row,
 * so a call served at priority is unpriced. Web search: $10 per 1,000 searches.
 * Sources: https://platform.claude.com/docs/en/about-claude/pricing (copies of Sept–Nov 2026), the
 * model pages it links, and `shared/reference/provider-wire.md` §5.1 (2026-11-29).
 */
export const ANTHROPIC_PRICE_VERSION = "anthropic-2026-11-29";

const WEB_SEARCH_USD = 0.01;

function row(
  input: number,
  w5: number,
  w1: number,
  read: number,
  output: number,
  extra: Partial<ModelPrice> = {},
): ModelPrice {
  const rates: Rates = { input, output, cacheWrite5m: w5, cacheWrite1h: w1, cacheRead: read };
  const half = (r: Rates): Rates => ({
    input: r.input / 2,
    output: r.output / 2,
    cacheWrite5m: (r.cacheWrite5m ?? 0) / 2,
    cacheWrite1h: (r.cacheWrite1h ?? 0) / 2,
    cacheRead: (r.cacheRead ?? 0) / 2,
  });
  return { rates, tiers: { batch: half(rates) }, webSearchPerRequestUsd: WEB_SEARCH_USD, ...extra };
}

// Opus 4.5 – 4.8 and Opus 5: $5 / $25 (pricing page, Nov 2026 copy).
const OPUS_4_5_TO_5 = row(5, 6.25, 10, 0.5, 25);
// Sonnet 4.5 with the >200K-token prompt band of the 1M context (pricing page, "Long context pricing").
const SONNET_4_5 = row(3, 3.75, 6, 0.3, 15, {
  bands: [
    {
      aboveInputTokens: 200_000,
      rates: { input: 6, output: 22.5, cacheWrite5m: 7.5, cacheWrite1h: 12, cacheRead: 0.6 },
    },
  ],
});
const HAIKU_4_5 = row(1, 1.25, 2, 0.1, 5);

export const ANTHROPIC_PRICES: PriceTable = {
  version: ANTHROPIC_PRICE_VERSION,
  models: {
    // 2026-09-22, Opus 5.5 model page: $4 / $20; cache hit 0.05× ($0.20).
    "claude-opus-5-5": row(4, 5, 8, 0.2, 20),
    // Sonnet 5.5 model page: $2 / $10; cache hit cut from $0.20 to $0.10 on 2026-10-07 (pricing page, Oct 2026).
    "claude-sonnet-5-5": row(2, 2.5, 4, 0.1, 10),
    // 2026-10-07, Haiku 5.5 model page "from $0.10 / $0.50"; prompts over 100K tokens billed
    // 0.50 / 0.625 / 1.00 / 0.05 / 2.50 on every token (pricing page prompt-length tier, Oct 2026).
    "claude-haiku-5-5": row(0.1, 0.125, 0.2, 0.01, 0.5, {
      bands: [
        {
          aboveInputTokens: 100_000,
          rates: { input: 0.5, output: 2.5, cacheWrite5m: 0.625, cacheWrite1h: 1, cacheRead: 0.05 },
        },
      ],
    }),
    // Opus 5 (legacy since Opus 5.5), pricing page Nov 2026.
    "claude-opus-5": OPUS_4_5_TO_5,
    // Sonnet 5 (legacy), pricing page Nov 2026: $2 / $10, hit $0.20 (the announced rise was cancelled).
    "claude-sonnet-5": row(2, 2.5, 4, 0.2, 10),
    // Opus 4.5 – 4.8, pricing page Nov 2026.
    "claude-opus-4-8": OPUS_4_5_TO_5,
    "claude-opus-4-7": OPUS_4_5_TO_5,
    "claude-opus-4-6": OPUS_4_5_TO_5,
    "claude-opus-4-5": OPUS_4_5_TO_5,
    "claude-opus-4-5-20251101": OPUS_4_5_TO_5,
    // Sonnet 4.6, pricing page: $3 / $15, no long-context surcharge since 2026-03-13.
    "claude-sonnet-4-6": row(3, 3.75, 6, 0.3, 15),
    // Sonnet 4.5, pricing page: $3 / $15 with the >200K band.
    "claude-sonnet-4-5": SONNET_4_5,
    "claude-sonnet-4-5-20250929": SONNET_4_5,
    // Haiku 4.5, pricing page: $1 / $5.
    "claude-haiku-4-5": HAIKU_4_5,
    "claude-haiku-4-5-20251001": HAIKU_4_5,
  },
};
