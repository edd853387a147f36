import type { ModelPrice, PriceTable, Rates } from "@alma-harness/core";

/**
 * OpenAI list prices, USD per million tokens. `cacheRead` is OpenAI's "cached input";
 * `cacheWrite5m` holds the one cache-write rate OpenAI bills (gpt-5.6 explicit caching, 1.25×
 * input; the adapters report OpenAI writes in that slot). Models without a write rate bill none.
 * Tiers: batch and flex at 50% where OpenAI lists them; priority only where a rate is published
 * (otherwise a priority-served call is unpriced). Web search (Responses `web_search`): $10 per
 * 1,000 calls, content tokens billed as input — only on models where that is the whole rule
 * (gpt-4o-mini / gpt-4.1-mini bill a fixed 8,000 tokens per call instead: unpriced here).
 * Sources: https://developers.openai.com/api/docs/pricing as tabulated in pydantic/genai-prices
 * `prices/providers/openai.yml` @ 47df840a (2026-08-21, each entry dated there), OpenAI's priority
 * processing page, and `shared/reference/provider-wire.md` §5.2 (2026-11-29).
 */
export const OPENAI_PRICE_VERSION = "openai-2026-11-29";

const SEARCH = 0.01;

function rates(input: number, cached: number, output: number, write?: number): Rates {
  return {
    input,
    output,
    cacheRead: cached,
    ...(write !== undefined ? { cacheWrite5m: write } : {}),
  };
}

function half(r: Rates): Rates {
  return {
    input: r.input / 2,
    output: r.output / 2,
    ...(r.cacheRead !== undefined ? { cacheRead: r.cacheRead / 2 } : {}),
    ...(r.cacheWrite5m !== undefined ? { cacheWrite5m: r.cacheWrite5m / 2 } : {}),
  };
}

/** A model with batch and flex at half price and optional priority rates. */
function model(
  standard: Rates,
  extra: { priority?: Rates; search?: boolean; bands?: ModelPrice["bands"] } = {},
): ModelPrice {
  return {
    rates: standard,
    tiers: {
      batch: half(standard),
      flex: half(standard),
      ...(extra.priority ? { priority: extra.priority } : {}),
    },
    ...(extra.search ? { webSearchPerRequestUsd: SEARCH } : {}),
    ...(extra.bands ? { bands: extra.bands } : {}),
  };
}

export const OPENAI_PRICES: PriceTable = {
  version: OPENAI_PRICE_VERSION,
  models: {
    // gpt-5.6-sol (2026-06-26 preview, GA later): $5 / $30, cached $0.50, explicit cache writes 1.25×;
    // prompts over 272K tokens 2× input and 1.5× output (cache terms in that band unpublished: unpriced).
    "gpt-5.6-sol": model(rates(5, 0.5, 30, 6.25), {
      search: true,
      bands: [{ aboveInputTokens: 272_000, rates: { input: 10, output: 45 } }],
    }),
    // gpt-5.6-luna after the 80% cut of 2026-07-30: $0.20 / $1.20, cached $0.02, write $0.25.
    "gpt-5.6-luna": model(rates(0.2, 0.02, 1.2, 0.25), { search: true }),
    // gpt-5.5: $5 / $30, cached $0.50; priority $12.50 / $1.25 / $75 (pricing page, Jun 2026).
    "gpt-5.5": model(rates(5, 0.5, 30), { search: true, priority: rates(12.5, 1.25, 75) }),
    // gpt-5.4: $2.50 / $15, cached $0.25; >272K: $5 / $0.50 / $22.50; priority $5 / $0.50 / $30.
    "gpt-5.4": model(rates(2.5, 0.25, 15), {
      search: true,
      priority: rates(5, 0.5, 30),
      bands: [{ aboveInputTokens: 272_000, rates: rates(5, 0.5, 22.5) }],
    }),
    // gpt-5.4-mini: $0.75 / $4.50, cached $0.075.
    "gpt-5.4-mini": model(rates(0.75, 0.075, 4.5), { search: true }),
    // gpt-5: $1.25 / $10, cached $0.125; priority $2.50 / $0.25 / $20.
    "gpt-5": model(rates(1.25, 0.125, 10), { search: true, priority: rates(2.5, 0.25, 20) }),
    // gpt-5-mini: $0.25 / $2, cached $0.025.
    "gpt-5-mini": model(rates(0.25, 0.025, 2), { search: true }),
    // gpt-5-nano: $0.05 / $0.40, cached $0.005.
    "gpt-5-nano": model(rates(0.05, 0.005, 0.4), { search: true }),
    // gpt-4.1 family: $2 / $8 (cached $0.50), mini $0.40 / $1.60 ($0.10), nano $0.10 / $0.40 ($0.025).
    "gpt-4.1": model(rates(2, 0.5, 8), { search: true }),
    "gpt-4.1-mini": model(rates(0.4, 0.1, 1.6)),
    "gpt-4.1-nano": model(rates(0.1, 0.025, 0.4)),
    // gpt-4o-mini: $0.15 / $0.60, cached $0.075.
    "gpt-4o-mini": model(rates(0.15, 0.075, 0.6)),
    // o3 since 2025-06-10: $2 / $8, cached $0.50; o4-mini: $1.10 / $4.40, cached $0.275.
    o3: model(rates(2, 0.5, 8), { search: true }),
    "o4-mini": model(rates(1.1, 0.275, 4.4), { search: true }),
  },
};
