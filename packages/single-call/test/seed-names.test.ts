// Seed 002 (`../shared/seeds/002_9827b5a177358ad3.txt`): "call:<kind>:aborted for a call its step
// runner aborted (usually stepTimeoutMs)". The governed step runner takes the seed's name for its
// round deadline, `roundTimeoutMs`, as the same setting (issue 29).
import { ManualClock } from "@alma-harness/core/testing";
import { inMemoryStores } from "@alma-harness/core/memory";
import { FakeModelClient, scriptedHang } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  createGovernedStepRunner,
  type GovernedStepRunnerConfig,
  type StepResult,
  StepRunnerConfigError,
} from "../src/index.js";

const settle = () => new Promise((resolve) => setImmediate(resolve));

function configWith(client: FakeModelClient, clock: ManualClock, timeouts: object) {
  const resolve = () => ({
    clientId: client.id,
    model: "m",
    maxOutputTokens: 64,
    cache: false as const,
  });
  const config: GovernedStepRunnerConfig = {
    ...timeouts,
    clock,
    clients: [client],
    configRevision: "r1",
    policy: { resolve },
    policyVersion: "p1",
    prices: { version: "p1", models: { m: { rates: { input: 1, output: 1 } } } },
    resultRetentionMs: 60_000,
    stores: inMemoryStores(),
  };
  return config;
}

describe('seed 002: "a call its step runner aborted (usually stepTimeoutMs)"', () => {
  it("stepTimeoutMs bounds the call's round, not a millisecond before", async () => {
    const clock = new ManualClock();
    const client = new FakeModelClient([scriptedHang()]);
    const runner = createGovernedStepRunner(configWith(client, clock, { stepTimeoutMs: 1_000 }));
    let result: StepResult | undefined;
    const running = runner
      .run({
        scope: { org: "o1", uid: "u1" },
        idempotencyKey: "k1",
        intent: { tier: "fast", sensitivity: "internal" },
        prompt: "Label this.",
        output: { name: "label", schema: { type: "object", properties: {} } },
      })
      .then((r) => {
        result = r;
        return r;
      });
    while (client.calls === 0) await settle();
    for (let i = 0; i < 5; i++) await settle();
    clock.advance(999);
    for (let i = 0; i < 20; i++) await settle();
    expect(result).toBeUndefined();
    clock.advance(1);
    expect(await running).toMatchObject({
      status: "reconciliation_required",
      cause: "call:single:aborted",
    });
    expect(client.closed).toBe(1);
  });

  it("is refused when it disagrees with roundTimeoutMs", () => {
    const client = new FakeModelClient([]);
    const both = { stepTimeoutMs: 1_000, roundTimeoutMs: 2_000 };
    expect(() => createGovernedStepRunner(configWith(client, new ManualClock(), both))).toThrow(
      StepRunnerConfigError,
    );
  });
});
