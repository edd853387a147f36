import type { ModelClient, ToolDefinition } from "@alma-harness/core";
import type { RuntimeConfig } from "@alma-harness/runtime";

/** The runner configuration every benchmark uses: one model `m` at $1 / $2 per Mtok, the given tools. */
export function benchConfig(
  model: ModelClient,
  tools: readonly ToolDefinition[],
  maxCalls = 8,
): RuntimeConfig {
  return {
    clients: [model],
    policy: {
      resolve: () => ({ clientId: model.id, model: "m", maxOutputTokens: 256, cache: false }),
    },
    prompt: "bench",
    tools,
    prices: { version: "p", models: { m: { rates: { input: 1, output: 2 } } } },
    policyVersion: "p",
    priceVersion: "p",
    configRevision: "r",
    resultRetentionMs: 3_600_000,
    runTimeoutMs: 600_000,
    maxCalls,
    maxInputChars: 10_000,
    // A fixed key: the runs compare with each other, and PostgreSQL requires one.
    trailKey: "bench-trail-key-at-least-32-bytes-long",
  };
}
