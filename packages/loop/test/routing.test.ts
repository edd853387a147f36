import { defineProviderTool, type ModelChoice } from "@alma-harness/core";
import { scriptedText, scriptedToolCall, scriptedUsage } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, log, pseudonym, tool } from "./harness.js";
import { scriptedSearch } from "./search-fixtures.js";

const MAIN: ModelChoice = {
  clientId: "fake",
  model: "fake-main",
  maxOutputTokens: 1024,
  cache: { ttl: "1h" },
  reasoning: "medium",
  serviceTier: "standard",
};

describe("routing: the main route is chosen once per turn", () => {
  it("policy.resolve runs once, on a copy of the intent, and every main step uses its choice", async () => {
    let given: object | undefined;
    const h = harness({
      tools: [echoTool],
      policy: (intent) => {
        given = intent;
        (intent as { tier: string }).tier = "deep";
        return MAIN;
      },
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    const input = h.input();
    completed(await h.engine.runTurn(input));
    expect(h.routes).toHaveLength(1);
    expect(given).not.toBe(input.intent);
    expect(input.intent.tier).toBe("balanced");
    expect(h.model.requests.map((r) => [r.model, r.cache, r.reasoning, r.serviceTier])).toEqual([
      ["fake-main", { ttl: "1h" }, "medium", "standard"],
      ["fake-main", { ttl: "1h" }, "medium", "standard"],
    ]);
  });

  it("a policy that throws refuses the turn before anything runs", async () => {
    const h = harness({
      policy: () => {
        throw new Error("no route for restricted data");
      },
      script: [scriptedText("never")],
    });
    expect(await h.run()).toEqual({
      status: "not_admitted",
      reason: "no route for restricted data",
    });
    expect(h.audit.events).toEqual([]);
    expect(h.model.calls).toBe(0);
    expect(h.events).toEqual([]);
  });

  it("a policy that picks an absent client or returns a malformed choice refuses the turn", async () => {
    const absent = harness({ policy: () => ({ ...MAIN, clientId: "ghost" }) });
    expect((await absent.run()).status).toBe("not_admitted");
    const malformed = harness({ policy: () => ({ ...MAIN, maxOutputTokens: -1 }) });
    expect((await malformed.run()).status).toBe("not_admitted");
    expect(absent.audit.events).toEqual([]);
  });

  it("a tail TTL of the policy's own reaches the request (1h prefix, 5m tail)", async () => {
    const h = harness({
      policy: () => ({ ...MAIN, cache: { ttl: "1h", tailTtl: "5m" } }),
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    expect(h.model.requests[0]?.cache).toEqual({ ttl: "1h", tailTtl: "5m" });
  });

  it("a snapshotted choice is used as given, and an absent client in it refuses the turn", async () => {
    const h = harness({ script: [scriptedText("ok")] });
    completed(await h.run({ choice: { ...MAIN, cache: false } }));
    expect(h.routes).toEqual([]);
    expect((await h.run({ choice: { ...MAIN, clientId: "ghost" } })).status).toBe("not_admitted");
  });
});

describe("routing: the trail", () => {
  it("records tier, sensitivity, client, model, cache ttl, reasoning and tier asked of the wire, per call", async () => {
    const h = harness({ policy: () => MAIN, script: [scriptedText("ok")] });
    completed(await h.run({ intent: { tier: "deep", sensitivity: "confidential" } }));
    const asked = {
      trail: "routing",
      sessionId: pseudonym("s1"),
      turnId: "turn-1",
      callId: "turn-1:main:1",
      kind: "main",
      tier: "deep",
      sensitivity: "confidential",
      clientId: "fake",
      model: "fake-main",
      cacheTtl: "1h",
      reasoning: "medium",
      requestedTier: "standard",
    };
    // The record of the ask, then the same with the tier the wire served.
    expect(h.trail("routing").map(({ seq: _s, at: _a, scope: _sc, ...e }) => e)).toEqual([
      asked,
      { ...asked, servedTier: "standard" },
    ]);
  });

  it("records the tier the wire says served the call, after settlement, when it differs from the one asked", async () => {
    const h = harness({
      policy: () => MAIN,
      prices: {
        version: "tiers",
        models: {
          "fake-main": {
            rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
            tiers: {
              priority: {
                input: 6,
                output: 30,
                cacheWrite5m: 7.5,
                cacheWrite1h: 12,
                cacheRead: 0.6,
              },
            },
          },
        },
      },
      script: [
        scriptedUsage(
          { inputTokens: 10, outputTokens: 5, serviceTier: "priority" },
          scriptedText("ok"),
        ),
      ],
    });
    const outcome = completed(await h.run());
    expect(h.trail("routing").map((e) => [e.requestedTier, e.servedTier])).toEqual([
      ["standard", undefined],
      ["standard", "priority"],
    ]);
    expect(outcome.receipts[0]?.serviceTier).toBe("priority");
    expect(outcome.costMicros).toBe(60 + 150);
  });

  it("children resolve their own routes, keep lineage and carry their own cache ttl onto every request", async () => {
    const childChoice: ModelChoice = {
      clientId: "small",
      model: "fake-main",
      maxOutputTokens: 128,
      cache: { ttl: "1h" },
    };
    const research = tool(
      "research",
      async (_i, ctx) =>
        (
          await ctx.models.delegate({
            tier: "fast",
            sensitivity: "public",
            prompt: "dig",
            tools: ["echo"],
          })
        ).text,
    );
    const h = harness({
      tools: [research, echoTool],
      policy: (intent) => (intent.task === "delegate" ? childChoice : { ...MAIN, cache: false }),
      script: [scriptedToolCall({ id: "m1", name: "research" }), scriptedText("ok")],
      smallScript: [
        scriptedToolCall({ id: "d1", name: "echo", input: { text: "x" } }),
        scriptedText("child"),
      ],
    });
    completed(await h.run());
    expect(h.routes.map((r) => [r.tier, r.sensitivity, r.task])).toEqual([
      ["balanced", "internal", undefined],
      ["fast", "public", "delegate"],
    ]);
    expect(h.small.requests.map((r) => r.cache)).toEqual([{ ttl: "1h" }, { ttl: "1h" }]);
    expect(
      h
        .trail("routing")
        .filter((e) => e.servedTier === undefined)
        .map((e) => [e.kind, e.tier, e.sensitivity, e.cacheTtl, e.parentCallId]),
    ).toEqual([
      ["main", "balanced", "internal", "off", undefined],
      ["delegate", "fast", "public", "1h", "m1"],
      ["delegate", "fast", "public", "1h", "m1"],
      ["main", "balanced", "internal", "off", undefined],
    ]);
  });
});

describe("provider tools", () => {
  const search = defineProviderTool({ kind: "web_search", maxSensitivity: "internal", maxUses: 1 });

  it("are advertised at the turn's sensitivity when it is at or below their ceiling", async () => {
    for (const sensitivity of ["public", "internal"] as const) {
      const h = harness({ providerTools: [search], script: [scriptedText("ok")] });
      completed(await h.run({ intent: { tier: "balanced", sensitivity } }));
      expect(h.model.requests[0]?.providerTools).toEqual([search]);
    }
  });

  it("are never advertised above their ceiling", async () => {
    const h = harness({ providerTools: [search], script: [scriptedText("ok")] });
    completed(await h.run({ intent: { tier: "balanced", sensitivity: "confidential" } }));
    expect(h.model.requests[0]?.providerTools).toBeUndefined();
  });

  it("are withheld from later steps once maxUses is spent", async () => {
    const twice = defineProviderTool({ kind: "web_search", maxUses: 2 });
    const h = harness({
      providerTools: [twice],
      script: [
        scriptedSearch("a", { stopReason: "pause_turn" }),
        scriptedSearch("b", { id: "srv_2", stopReason: "pause_turn" }),
        scriptedText("done"),
      ],
    });
    completed(await h.run());
    expect(h.model.requests.map((r) => r.providerTools?.length ?? 0)).toEqual([1, 1, 0]);
  });

  it("are never advertised to a delegate", async () => {
    const research = tool(
      "research",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const h = harness({
      tools: [research],
      providerTools: [search],
      script: [scriptedToolCall({ id: "m1", name: "research" }), scriptedText("ok")],
      smallScript: [scriptedText("child")],
    });
    completed(await h.run());
    expect(h.model.requests[0]?.providerTools).toEqual([search]);
    expect(h.small.requests[0]?.providerTools).toBeUndefined();
    expect(h.small.requests[0]?.tools).toEqual([]);
  });

  it("search results are persisted in arrival order and replayed on the next step", async () => {
    const h = harness({
      providerTools: [search],
      script: [scriptedSearch("found", { stopReason: "pause_turn" }), scriptedText("done")],
    });
    const outcome = await h.run();
    completed(outcome);
    expect(log(outcome)[1]?.blocks.map((b) => b.type)).toEqual([
      "provider_tool_call",
      "provider_tool_result",
      "text",
    ]);
    expect(h.model.requests[1]?.messages[1]).toEqual(log(outcome)[1]);
  });
});

describe("the child route", () => {
  it("a policy that refuses the child's route makes the turn uncertain", async () => {
    const research = tool(
      "research",
      async (_i, ctx) =>
        (await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "q" })).text,
    );
    const h = harness({
      tools: [research],
      policy: (intent) => {
        if (intent.task === "direct") throw new Error("no direct route");
        return { ...MAIN, cache: false };
      },
      script: [scriptedToolCall({ id: "m1", name: "research" })],
    });
    const outcome = await h.run();
    expect(outcome).toMatchObject({
      status: "reconciliation_required",
      cause: "call:direct:routing_unavailable",
    });
  });
});
