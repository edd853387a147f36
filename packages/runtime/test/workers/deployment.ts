/**
 * What every host process of the runtime's process tests shares, as processes of one deployment
 * must: the price table, the versions, the retention and the limits.
 */
export const DEPLOYMENT = {
  prices: { version: "p1", models: { demo: { rates: { input: 1, output: 2 } } } },
  policyVersion: "p",
  priceVersion: "p1",
  configRevision: "r1",
  resultRetentionMs: 86_400_000,
  runTimeoutMs: 60_000,
  maxCalls: 4,
  maxInputChars: 10_000,
} as const;
