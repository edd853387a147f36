import { type ModelPolicy, type PriceTable, trailKey } from "@alma-harness/core";

/** What the wire test and its collecting process share: prices, policy, scope and trail key (data only). */
export const WIRE_JOB_KEY = trailKey("model-jobs-test-trail-key-of-32-bytes!");
export const WIRE_SCOPE = Object.freeze({ org: "clinic-7", uid: "nightly" });
/** Sonnet-class prices with the batch row at half. */
export const WIRE_PRICES: PriceTable = {
  version: "p-wire",
  models: {
    "claude-sonnet-4-5": {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
      tiers: {
        batch: { input: 1.5, output: 7.5, cacheWrite5m: 1.875, cacheWrite1h: 3, cacheRead: 0.15 },
      },
    },
  },
};
export const WIRE_POLICY: ModelPolicy = {
  resolve: () => ({
    clientId: "anthropic-batch",
    model: "claude-sonnet-4-5",
    maxOutputTokens: 200,
    cache: false,
  }),
};
