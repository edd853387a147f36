import { inMemoryStores } from "@alma-harness/core/memory";
import { createAnthropicClient } from "@alma-harness/providers";
import { createGovernedStepRunner } from "@alma-harness/single-call";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  anthropicWire,
  character,
  WIRE_STEP_MICROS,
  WIRE_STEP_POLICY,
  WIRE_STEP_PRICES,
  wireStep,
} from "./anthropic-wire-kit.js";

let wire: Awaited<ReturnType<typeof anthropicWire>>;
beforeAll(async () => {
  wire = await anthropicWire();
});
afterAll(() => wire.close());

describe("a step call through the real Anthropic adapter, on recorded traffic over a local socket", () => {
  const runner = (stores = inMemoryStores()) =>
    createGovernedStepRunner({
      stores,
      clients: [createAnthropicClient({ apiKey: "sk-ant-test", baseURL: wire.url })],
      policy: WIRE_STEP_POLICY,
      prices: WIRE_STEP_PRICES,
      policyVersion: "policy-1",
      configRevision: "rev-1",
      trailKey: "single-call-wire-trail-key-of-32-bytes-or-more",
      resultRetentionMs: 86_400_000,
    });
  const scope = { org: "guild", uid: "scribe" };
  const request = (key: string, classes: readonly string[]) => wireStep(scope, key, classes);

  it("sends output_config.format, validates the recorded answer against the schema and settles its recorded usage", async () => {
    const result = await runner().run(request("k1", ["warrior", "mage", "thief"]));
    expect(result.status).toBe("completed");
    if (result.status !== "completed") return;
    expect((result.object.characters as { name: string }[]).map((c) => c.name)).toEqual([
      "Theron Ironheart",
      "Lyra Starweaver",
      "Rook Shadowstep",
    ]);
    // 313 input and 305 output tokens at $3 / $15 per million.
    expect(result.receipt).toMatchObject({
      usage: { inputTokens: 313, outputTokens: 305 },
      usdMicros: WIRE_STEP_MICROS,
      kind: "single",
    });
    expect(wire.bodies.at(-1)).toMatchObject({
      model: "claude-sonnet-4-5",
      temperature: 0,
      output_config: {
        format: { type: "json_schema", schema: character(["warrior", "mage", "thief"]) },
      },
    });
  });

  it("the same recorded answer under a schema it does not satisfy is invalid, with the receipt", async () => {
    const result = await runner().run(request("k2", ["warrior", "mage"]));
    expect(result).toMatchObject({
      status: "invalid",
      reason: "schema",
      problem: "/characters/2/class must be equal to one of the allowed values",
      receipt: { usdMicros: WIRE_STEP_MICROS },
    });
  });
});
