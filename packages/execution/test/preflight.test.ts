import { normalizeBudgetCaps, type PriceTable } from "@alma-harness/core";
import { CallRefusedError, GovernedCalls, unpricedBeforeDispatch } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, NOW, PRICES, REQUEST, setup } from "./fixtures.js";

describe("unpricedBeforeDispatch: every row a request can reach", () => {
  const cases: [string, Partial<typeof CHOICE>, Partial<typeof REQUEST>, string | undefined][] = [
    ["a priced model at the standard tier", {}, {}, undefined],
    ["an unknown model", { model: "ghost" }, {}, "model"],
    ["a tier with its own row", { serviceTier: "priority" }, {}, undefined],
    ["a tier without a row (never guessed from standard)", { serviceTier: "flex" }, {}, "tier"],
    ["a 5-minute cache with its rows", {}, { cache: { ttl: "5m" } }, undefined],
    ["a 1-hour cache with its rows", {}, { cache: { ttl: "1h" } }, undefined],
    ["a cache on a model without a write row", { model: "bare" }, { cache: { ttl: "5m" } }, "cache_write_5m"],
    ["an advertised search with a per-request price", {}, { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] }, undefined],
    ["an advertised search without one", { model: "bare" }, { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] }, "web_search"],
  ];
  for (const [name, choice, request, missing] of cases) {
    it(name, () => {
      expect(unpricedBeforeDispatch(PRICES, { ...CHOICE, ...choice }, { ...REQUEST, ...request })).toBe(missing);
    });
  }

  it("a one-hour write needs its own row even when the five-minute row exists", () => {
    const prices: PriceTable = { version: "v", models: { m: { rates: { input: 1, output: 1, cacheWrite5m: 1, cacheRead: 1 } } } };
    expect(unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "1h" } })).toBe("cache_write_1h");
    expect(unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "5m" } })).toBeUndefined();
  });

  it("a cache needs the read row too", () => {
    const prices: PriceTable = { version: "v", models: { m: { rates: { input: 1, output: 1, cacheWrite5m: 1 } } } };
    expect(unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "5m" } })).toBe("cache_read");
  });

  it("a long-context band without the tier's row is unpriced", () => {
    const prices: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 1, output: 1 }, tiers: { priority: { input: 2, output: 2 } }, bands: [{ aboveInputTokens: 200_000, rates: { input: 2, output: 2 } }] } },
    };
    expect(unpricedBeforeDispatch(prices, { ...CHOICE, serviceTier: "priority" }, REQUEST)).toBe("tier");
    expect(unpricedBeforeDispatch(prices, CHOICE, REQUEST)).toBeUndefined();
  });
});

describe("GovernedCalls.prepare: refused before anything is claimed or sent", () => {
  it("an unpriced call is refused at zero cost: nothing validated, claimed or counted; the refusal is on the cost trail", async () => {
    const s = setup();
    const c = client();
    const error = await s.calls.prepare(identity(), c, { ...CHOICE, model: "ghost" }, { ...REQUEST, model: "ghost" }, s.ledger, NOW).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallRefusedError);
    expect(error).toMatchObject({ reason: "unpriced", missing: "model", code: "call_refused_unpriced" });
    expect(c.validated).toEqual([]);
    expect(await s.journal.get(identity().scope, "t1:main:1")).toBeUndefined();
    expect(s.ledger.calls).toBe(0);
    expect(s.audit.trail("cost").map((e) => [e.usdMicros, e.refused])).toEqual([[0, { reason: "unpriced", detail: "no price for model" }]]);
  });

  it("a block cap reached exactly is refused; one micro-dollar below is not", async () => {
    const s = setup({ caps: { perTurnUsd: 0.0001 } });
    s.ledger.spentMicros = 99;
    await expect(s.calls.prepare(identity(1), client(), CHOICE, REQUEST, s.ledger, NOW)).resolves.toBeDefined();
    s.ledger.spentMicros = 100;
    await expect(s.calls.prepare(identity(2), client(), CHOICE, REQUEST, s.ledger, NOW)).rejects.toMatchObject({ reason: "cap", cap: "perTurnUsd" });
    expect(s.ledger.calls).toBe(1);
  });

  it("a warn cap never refuses", async () => {
    const s = setup({ caps: { perTurnUsd: { usd: 0.0001, onExceeded: "warn" } } });
    s.ledger.spentMicros = 1_000_000;
    await expect(s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW)).resolves.toBeDefined();
  });

  it("a client's validate that throws stops the call before the claim", async () => {
    const s = setup();
    const c = client();
    c.validate = () => {
      throw new Error("unsupported control");
    };
    await expect(s.calls.prepare(identity(), c, CHOICE, REQUEST, s.ledger, NOW)).rejects.toThrow("unsupported control");
    expect(await s.journal.get(identity().scope, "t1:main:1")).toBeUndefined();
  });

  it("an operation claimed before is never sent twice", async () => {
    const s = setup();
    await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
    const c = client();
    await expect(s.calls.prepare(identity(), c, CHOICE, REQUEST, s.ledger, NOW)).rejects.toMatchObject({ code: "unsettled_call" });
    expect(c.streamed).toEqual([]);
  });
});

describe("GovernedCalls: construction", () => {
  const base = () => setup().config;

  it("caps that were not normalized throw TypeError", () => {
    expect(() => new GovernedCalls({ ...base(), caps: { perTurnUsd: 1 } as never })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), caps: { perWeekUsd: { usdMicros: 1, onExceeded: "warn" } } as never })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), caps: { perTurnUsd: { usdMicros: -1, onExceeded: "block" } } as never })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), caps: normalizeBudgetCaps({ perTurnUsd: 1 }) })).not.toThrow();
    expect(() => normalizeBudgetCaps({ perTurnUsd: Number.NaN })).toThrow(TypeError);
  });

  it("a price table with a rate of seven decimals, a store without its methods, a bad policy version", () => {
    expect(() => new GovernedCalls({ ...base(), prices: { version: "v", models: { m: { rates: { input: 0.0000001, output: 1 } } } } })).toThrow(/six decimals/);
    expect(() => new GovernedCalls({ ...base(), journal: {} as never })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), policyVersion: "has space" })).toThrow(/policyVersion/);
    expect(() => new GovernedCalls({ ...base(), consumers: ["a", "a"] })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), dispatchDeadlineMs: 0 })).toThrow(TypeError);
  });

  it("keeps a frozen copy of the price table", () => {
    const prices = structuredClone(PRICES) as { models: Record<string, unknown> };
    const calls = new GovernedCalls({ ...base(), prices: prices as unknown as PriceTable });
    prices.models.m = { rates: { input: 0, output: 0 } };
    expect(calls.prices.models.m?.rates.input).toBe(3);
    expect(Object.isFrozen(calls.prices)).toBe(true);
  });
});
