// What the offline examples share: a scripted model priced as "demo", and a memory runtime's
// configuration around it (the quickstart's). A real host names its own clients, prices and limits.
import type { ToolDefinition } from "@alma-harness/core";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";
import type { RuntimeConfig } from "@alma-harness/runtime";

export function offlineConfig(
  prompt: string,
  tools: readonly ToolDefinition[],
  script: ScriptedResponse[],
): RuntimeConfig {
  return {
    clients: [new FakeModelClient(script)],
    policy: {
      resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 512, cache: false }),
    },
    prompt,
    tools,
    // The host's policy: these tools run without asking anyone.
    permissions: { decide: () => "allow" },
    prices: { version: "p1", models: { demo: { rates: { input: 3, output: 15 } } } },
    policyVersion: "policy-1",
    priceVersion: "p1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 6,
    maxInputChars: 20_000,
  };
}
