import {
  defineProviderTool,
  type ModelPrice,
  type ModelRequest,
  type PriceTable,
  worstCaseMicros,
} from "@alma-harness/core";
import { InMemoryCostSettlementStore, ManualClock } from "@alma-harness/core/testing";
import { scriptedText, scriptedToolCall, scriptedUsage } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  echoTool,
  harness,
  type HarnessOptions,
  PRICES,
  tool,
  uncertain,
} from "./harness.js";
import { scriptedSearch } from "./search-fixtures.js";

// One default call: 10 input at $3/Mtok + 5 output at $15/Mtok = 105 micro-dollars.
const CALL = 105;
const usd = (micros: number) => micros / 1e6;

/**
 * The worst case each call reserves (main calls, then the small model's), from the same script run
 * `runs` times without caps: the clock, ids and requests are deterministic, so a capped run asks the same.
 */
async function worstCases(opts: HarnessOptions, runs = 1): Promise<number[]> {
  const dry = harness(opts);
  for (let i = 0; i < runs; i++) await dry.run();
  return [...dry.model.requests, ...dry.small.requests].map(
    (request) =>
      worstCaseMicros(
        PRICES,
        {
          clientId: "fake",
          model: request.model,
          maxOutputTokens: request.maxOutputTokens,
          cache: false,
        },
        request,
      ) ?? Number.NaN,
  );
}
const echo = (id: string) => scriptedToolCall({ id, name: "echo", input: { text: id } });

async function refusedBeforeDispatch(opts: HarnessOptions) {
  const h = harness({ script: [scriptedText("never")], ...opts });
  const result = completed(await h.run());
  expect(result.budget).toEqual({ metric: "unpriced", answered: false });
  expect(result.costMicros).toBe(0);
  expect(h.model.calls).toBe(0);
  expect(await h.journal.get(h.input().scope, "turn-1:main:1")).toBeUndefined();
  expect(h.trail("cost").map((e) => [e.usdMicros, e.refused?.reason])).toEqual([[0, "unpriced"]]);
  return h;
}

describe("unpriced never spends", () => {
  it("an unpriced model is refused before dispatch at zero cost: never called, nothing journaled", async () => {
    await refusedBeforeDispatch({ choice: { model: "mystery-model" } });
  });

  it("an unpriced requested tier is refused the same way", async () => {
    await refusedBeforeDispatch({ choice: { serviceTier: "priority" } });
  });

  it("a one-hour cache write without its own row is refused the same way", async () => {
    const prices: PriceTable = {
      version: "v",
      models: {
        "fake-main": { rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheRead: 0.3 } },
      },
    };
    await refusedBeforeDispatch({ prices, choice: { cache: { ttl: "1h" } } });
  });

  it("an advertised web search without a per-request price is refused the same way", async () => {
    const prices: PriceTable = {
      version: "v",
      models: { "fake-main": { rates: { input: 3, output: 15 } } },
    };
    await refusedBeforeDispatch({
      prices,
      providerTools: [defineProviderTool({ kind: "web_search" })],
    });
  });

  it("a search the table cannot price, found after dispatch, leaves the turn uncertain", async () => {
    const prices: PriceTable = {
      version: "v",
      models: { "fake-main": { rates: { input: 3, output: 15 } } },
    };
    const h = harness({ prices, script: [scriptedSearch("found")] });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:unsettled:end_turn");
    expect(outcome.receipts).toEqual([]);
    expect((await h.journal.get(h.input().scope, "turn-1:main:1"))?.state).toBe("received");
  });

  it("a served tier the table cannot price leaves the turn uncertain", async () => {
    const h = harness({
      script: [
        scriptedUsage(
          { inputTokens: 10, outputTokens: 5, serviceTier: "flex" },
          scriptedText("hi"),
        ),
      ],
    });
    expect(uncertain(await h.run()).cause).toBe("call:main:unsettled:end_turn");
  });

  it("a priced search is charged per request", async () => {
    const h = harness({
      providerTools: [defineProviderTool({ kind: "web_search" })],
      script: [scriptedSearch("found")],
    });
    expect(completed(await h.run()).costMicros).toBe(CALL + 10_000);
  });
});

describe("perTurnUsd", () => {
  const twoSteps = () => [echo("c1"), scriptedText("done")];

  it("block: a call goes out while settled spend plus its worst case is at the cap, exactly", async () => {
    const [w1 = 0, w2 = 0] = await worstCases({ tools: [echoTool], script: twoSteps() });
    expect(w2).toBeGreaterThan(CALL);
    const h = harness({
      tools: [echoTool],
      caps: { perTurnUsd: usd(CALL + w2) },
      script: twoSteps(),
    });
    const result = completed(await h.run());
    expect(w1).toBeLessThanOrEqual(CALL + w2);
    expect(result.terminalReason).toBe("answered");
    expect(result.receipts.map((r) => r.capsCrossed)).toEqual([[], []]);
    expect(h.model.calls).toBe(2);
  });

  it("block, one micro-dollar less: the call that would not fit is refused at zero cost, nothing claimed", async () => {
    const [, w2 = 0] = await worstCases({ tools: [echoTool], script: twoSteps() });
    const h = harness({
      tools: [echoTool],
      caps: { perTurnUsd: usd(CALL + w2 - 1) },
      script: twoSteps(),
    });
    const result = completed(await h.run());
    expect(result.budget).toEqual({ metric: "perTurnUsd", answered: false });
    expect(result.costMicros).toBe(CALL);
    expect(h.model.calls).toBe(1);
    expect(await h.journal.get(h.input().scope, "turn-1:main:2")).toBeUndefined();
    expect(
      h.trail("cost").map((e) => [e.usdMicros, e.refused?.reason ?? null, e.warning ?? null]),
    ).toEqual([
      [CALL, null, null],
      [0, "cap", null],
    ]);
  });

  it("block: a first call whose worst case alone passes the cap is never sent", async () => {
    const [w1 = 0] = await worstCases({ tools: [echoTool], script: twoSteps() });
    const h = harness({ tools: [echoTool], caps: { perTurnUsd: usd(w1 - 1) }, script: twoSteps() });
    const result = completed(await h.run());
    expect(result.budget).toEqual({ metric: "perTurnUsd", answered: false });
    expect(result.costMicros).toBe(0);
    expect(h.model.calls).toBe(0);
    expect(await h.journal.get(h.input().scope, "turn-1:main:1")).toBeUndefined();
  });

  it("warn: exactly at the cap continues silently; one micro-dollar over continues with one warning", async () => {
    const at = harness({
      tools: [echoTool],
      caps: { perTurnUsd: { usd: usd(CALL), onExceeded: "warn" } },
      script: twoSteps(),
    });
    const atResult = completed(await at.run());
    expect(atResult.terminalReason).toBe("answered");
    expect(atResult.receipts.map((r) => r.capsCrossed)).toEqual([[], ["perTurnUsd"]]);
    const over = harness({
      tools: [echoTool],
      caps: { perTurnUsd: { usd: usd(CALL - 1), onExceeded: "warn" } },
      script: [echo("c1"), echo("c2"), scriptedText("done")],
    });
    const overResult = completed(await over.run());
    expect(overResult.terminalReason).toBe("answered");
    expect(
      over
        .trail("cost")
        .filter((e) => e.warning)
        .map((e) => e.warning),
    ).toEqual([{ cap: "perTurnUsd", action: "warn" }]);
    expect(overResult.warnings).toEqual(["perTurnUsd:crossed"]);
  });
});

describe("session and tenant-day caps read authoritative spend", () => {
  it("a session cap warns by default and blocks when opted in", async () => {
    const warn = harness({
      caps: { perSessionUsd: usd(CALL) },
      script: [scriptedText("a"), scriptedText("b")],
    });
    completed(await warn.run());
    expect(completed(await warn.run()).receipts[0]?.capsCrossed).toEqual(["perSessionUsd"]);
    const [, w2 = 0] = await worstCases({ script: [scriptedText("a"), scriptedText("never")] }, 2);
    const block = harness({
      caps: { perSessionUsd: { usd: usd(CALL + w2 - 1), onExceeded: "block" } },
      script: [scriptedText("a"), scriptedText("never")],
    });
    completed(await block.run());
    expect(completed(await block.run()).budget?.metric).toBe("perSessionUsd");
    expect(block.model.calls).toBe(1);
    // another session of the same person is not blocked
    block.model.push(scriptedText("other session"));
    expect(completed(await block.run({ sessionId: "s2" })).terminalReason).toBe("answered");
    // at the limit exactly, the second turn's call goes out
    const at = harness({
      caps: { perSessionUsd: { usd: usd(CALL + w2), onExceeded: "block" } },
      script: [scriptedText("a"), scriptedText("b")],
    });
    completed(await at.run());
    expect(completed(await at.run()).terminalReason).toBe("answered");
  });

  it("a tenant-day block cap stops the tenant, never another tenant, and a new day starts afresh", async () => {
    const [w1 = 0] = await worstCases({ script: [scriptedText("a")] });
    const settlements = new InMemoryCostSettlementStore();
    const clock = new ManualClock();
    const h = harness({
      settlements,
      clock,
      caps: { perTenantDayUsd: { usd: usd(CALL + w1 - 1), onExceeded: "block" } },
      script: [scriptedText("a"), scriptedText("b"), scriptedText("c")],
    });
    completed(await h.run());
    expect(
      completed(await h.run({ scope: { org: "clinic-a", uid: "patient-2" }, sessionId: "s9" }))
        .budget?.metric,
    ).toBe("perTenantDayUsd");
    expect(
      completed(await h.run({ scope: { org: "clinic-b", uid: "patient-1" } })).terminalReason,
    ).toBe("answered");
    expect(await h.spend.tenantDays("clinic-a")).toEqual([{ day: "2026-01-01", usdMicros: CALL }]);
    clock.advance(24 * 3_600_000);
    expect(completed(await h.run()).terminalReason).toBe("answered");
  });

  it("a tenant-day cap warns by default", async () => {
    const h = harness({ caps: { perTenantDayUsd: usd(CALL - 1) }, script: [scriptedText("a")] });
    const result = completed(await h.run());
    expect(result.receipts[0]?.capsCrossed).toEqual(["perTenantDayUsd"]);
    expect(h.trail("cost")[0]?.warning).toEqual({ cap: "perTenantDayUsd", action: "warn" });
  });
});

describe("one accounting path per call", () => {
  it("a replayed settlement (same receipt) returns the original and moves spend once", async () => {
    const settlements = new InMemoryCostSettlementStore();
    const first = harness({ settlements, script: [scriptedText("hi")] });
    const a = completed(await first.run());
    const second = harness({ settlements, script: [scriptedText("hi")] });
    const b = completed(await second.run());
    expect(b.receipts).toEqual(a.receipts);
    expect(b.receipts[0]?.settlementId).toBe("turn-1:main:1:settlement");
    expect(
      (await settlements.spend.peek(first.input().scope, "s1", "2026-01-01")).sessionMicros,
    ).toBe(CALL);
  });

  it("a settlement id replayed with different input is a conflict: the turn is uncertain, spend unmoved", async () => {
    const settlements = new InMemoryCostSettlementStore();
    completed(await harness({ settlements, script: [scriptedText("hi")] }).run());
    const h = harness({
      settlements,
      script: [scriptedUsage({ inputTokens: 11, outputTokens: 5 }, scriptedText("hi"))],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:settlement_conflict");
    expect(outcome.failure.message).toContain("turn-1:main:1:settlement");
    expect((await settlements.spend.peek(h.input().scope, "s1", "2026-01-01")).sessionMicros).toBe(
      CALL,
    );
  });

  it("warnings are deduplicated per turn when concurrent children cross the same cap", async () => {
    const ask = tool(
      "ask",
      async (_i, ctx) =>
        (await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "q" })).text,
    );
    const h = harness({
      tools: [ask],
      caps: { perSessionUsd: usd(CALL + 20) },
      limits: { maxParallelToolCalls: 2 },
      script: [
        scriptedToolCall([
          { id: "c1", name: "ask" },
          { id: "c2", name: "ask" },
        ]),
        scriptedText("ok"),
      ],
      smallScript: [scriptedText("a"), scriptedText("b")],
    });
    const result = completed(await h.run());
    const children = result.receipts.filter((r) => r.kind === "direct");
    expect(children.map((r) => r.capsCrossed)).toEqual([["perSessionUsd"], ["perSessionUsd"]]);
    expect(
      h
        .trail("cost")
        .filter((e) => e.warning)
        .map((e) => e.warning),
    ).toEqual([{ cap: "perSessionUsd", action: "warn" }]);
    expect(result.warnings).toEqual(["perSessionUsd:crossed"]);
  });

  it("totals are inclusive: main and child calls share the root", async () => {
    const ask = tool(
      "ask",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "q" })).text,
    );
    const h = harness({
      tools: [ask],
      script: [scriptedToolCall({ id: "c1", name: "ask" }), scriptedText("ok")],
      smallScript: [scriptedText("a")],
    });
    const result = completed(await h.run());
    expect(result.costMicros).toBe(result.receipts.reduce((sum, r) => sum + r.usdMicros, 0));
    expect(result.receipts.map((r) => [r.kind, r.usdMicros])).toEqual([
      ["main", CALL],
      ["delegate", 35],
      ["main", CALL],
    ]);
    const settled = await h.settlements.list(h.input().scope, { turnId: "turn-1" });
    expect(settled.items.map((s) => s.receipt.settlementId).sort()).toEqual(
      result.receipts.map((r) => r.settlementId).sort(),
    );
  });

  it("a child whose worst case does not fit under the turn cap gets the refusal, at zero cost", async () => {
    const refusals: string[] = [];
    const ask = tool("ask", async (_i, ctx) => {
      try {
        return (await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "q" }))
          .text;
      } catch (error) {
        refusals.push((error as { code: string }).code);
        return "no budget";
      }
    });
    // A main model at a cent per Mtok: its worst case is small, a child's is not.
    const prices: PriceTable = {
      version: "v",
      models: {
        "fake-main": { rates: { input: 0.01, output: 0.01 } },
        "fake-small": PRICES.models["fake-small"] as ModelPrice,
      },
    };
    const script = () => [scriptedToolCall({ id: "c1", name: "ask" }), scriptedText("ok")];
    const dry = harness({
      tools: [ask],
      prices,
      script: script(),
      smallScript: [scriptedText("a")],
    });
    completed(await dry.run());
    const child = dry.small.requests[0] as ModelRequest;
    const wc =
      worstCaseMicros(
        prices,
        {
          clientId: "small",
          model: child.model,
          maxOutputTokens: child.maxOutputTokens,
          cache: false,
        },
        child,
      ) ?? 0;
    // Room for the main call's worst case and for what it settled, not for a child's worst case on top.
    const h = harness({ tools: [ask], prices, caps: { perTurnUsd: usd(wc) }, script: script() });
    refusals.length = 0;
    const result = completed(await h.run());
    expect(refusals).toEqual(["call_refused_cap"]);
    // The main model's next call still fits: the turn answers with the tool's "no budget" in view.
    expect(result.terminalReason).toBe("answered");
    expect(h.small.calls).toBe(0);
  });
});
