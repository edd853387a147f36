// Names seed 001 (`../shared/seeds/001_1e3222a344f96376.txt`, @alma-harness/core) spells otherwise
// than Alma did, checked through the public exports under the seed's spelling (issue 29).
import {
  type ModelRequest,
  normalizeCostSettlement,
  normalizeNewModelJob,
  normalizePriceTable,
  normalizeSpendTotals,
  type PriceTable,
  priceUsage,
  ValidationError,
  webSearchUsdPerRequest,
  worstCaseMicros,
} from "@alma-harness/core";
import * as stores from "@alma-harness/core/stores";
import { InMemoryCostSettlementStore } from "@alma-harness/core/memory";
import { jobItemOf, jobOf } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";

const table = (search: Record<string, number>): PriceTable => ({
  version: "p1",
  models: { m: { rates: { input: 1, output: 1 }, ...search } },
});
const searched = { inputTokens: 0, outputTokens: 0, webSearchRequests: 3 };
const request: ModelRequest = {
  system: [],
  messages: [{ role: "user", blocks: [{ type: "text", text: "hi" }] }],
  tools: [],
  maxOutputTokens: 0,
  providerTools: [{ kind: "web_search", maxSensitivity: "internal", maxUses: 2 }],
} as unknown as ModelRequest;

describe('seed 001: "neither does an unpriced service tier or an unpriced web search (webSearchUsdPerRequest)"', () => {
  it("a table in the seed's spelling prices each search, before dispatch and after", () => {
    const seed = normalizePriceTable(table({ webSearchUsdPerRequest: 0.01 }));
    expect(priceUsage(seed, "m", searched)).toMatchObject({ status: "priced", usdMicros: 30_000 });
    const choice = { clientId: "c", model: "m" } as never;
    const bare = { ...request, providerTools: [] } as ModelRequest;
    const worst = (t: PriceTable, r: ModelRequest) => worstCaseMicros(t, choice, r) ?? Number.NaN;
    // Two searches at most (maxUses 2), one cent each, above the same request without the tool.
    expect(worst(seed, request) - worst(seed, bare)).toBe(20_000);
    expect(worstCaseMicros(normalizePriceTable(table({})), choice, request)).toBeUndefined();
  });

  it("the older spelling is read too, to the same price", () => {
    const old = normalizePriceTable(table({ webSearchPerRequestUsd: 0.01 }));
    expect(priceUsage(old, "m", searched)).toEqual(
      priceUsage(normalizePriceTable(table({ webSearchUsdPerRequest: 0.01 })), "m", searched),
    );
    expect(
      webSearchUsdPerRequest({ rates: { input: 1, output: 1 }, webSearchPerRequestUsd: 0.02 }),
    ).toBe(0.02);
  });

  it("neither spelling: a call that searched is unpriced; both, differing: the table is refused", () => {
    expect(priceUsage(normalizePriceTable(table({})), "m", searched)).toMatchObject({
      status: "unpriced",
      missing: "web_search",
    });
    const both = table({ webSearchUsdPerRequest: 0.01, webSearchPerRequestUsd: 0.02 });
    expect(() => normalizePriceTable(both)).toThrow(ValidationError);
    expect(() =>
      normalizePriceTable(table({ webSearchUsdPerRequest: 0.01, webSearchPerRequestUsd: 0.01 })),
    ).not.toThrow();
  });

  it("the seed's spelling obeys the six-decimal rule under its own path", () => {
    const error = (() => {
      try {
        normalizePriceTable(table({ webSearchUsdPerRequest: 0.0100001 }));
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(error?.path).toBe("prices.models.m.webSearchUsdPerRequest");
  });
});

const receipt = {
  settlementId: "op-1:settlement",
  operationId: "op-1",
  turnId: "turn-1",
  kind: "main",
  clientId: "fake",
  model: "m",
  serviceTier: "standard",
  usage: { inputTokens: 10, outputTokens: 5 },
  usdMicros: 42,
  priceVersion: "p1",
  capsCrossed: [],
} as const;
const settlement = {
  scope: { org: "clinic-a", uid: "u1" },
  sessionId: "s1",
  day: "2026-10-04",
  receipt,
  at: Date.UTC(2026, 9, 4, 12),
  consumers: ["billing"],
};

describe('seed 001: "normalizeCostSettlement rejects unknown fields and snapshots the closed record before I/O"', () => {
  it("is the settlement normalizer every store applies, on the main entry and ./stores", () => {
    expect(normalizeCostSettlement).toBe(stores.normalizeSettlement);
    expect(stores.normalizeCostSettlement).toBe(stores.normalizeSettlement);
  });

  it("rejects an unknown field, and snapshots: a later change of the input does not reach the copy", () => {
    expect(() => normalizeCostSettlement({ ...settlement, note: "x" })).toThrow(ValidationError);
    const input = structuredClone(settlement) as { consumers: string[] };
    const copy = normalizeCostSettlement(input);
    input.consumers.push("late");
    expect(copy.consumers).toEqual(["billing"]);
    expect(Object.isFrozen(copy)).toBe(true);
  });

  it("what it refuses, the store refuses before any write", async () => {
    const store = new InMemoryCostSettlementStore();
    await expect(store.settle({ ...settlement, note: "x" } as never)).rejects.toThrow(
      ValidationError,
    );
    expect(await store.get(settlement.scope, receipt.settlementId)).toBeUndefined();
  });
});

describe('seed 001: "normalizeBudgetCaps, normalizeSpendTotals, normalizeCostReceipt and costReceiptWarnings share closed financial rules"', () => {
  it("closes and checks spend totals, frozen", () => {
    const totals = normalizeSpendTotals({ sessionMicros: 5, tenantDayMicros: 7 });
    expect(totals).toEqual({ sessionMicros: 5, tenantDayMicros: 7 });
    expect(Object.isFrozen(totals)).toBe(true);
    expect(() => normalizeSpendTotals({ sessionMicros: 5, tenantDayMicros: 7, x: 1 })).toThrow(
      ValidationError,
    );
    expect(() => normalizeSpendTotals({ sessionMicros: -1, tenantDayMicros: 0 })).toThrow(
      /sessionMicros/,
    );
    expect(() => normalizeSpendTotals({ sessionMicros: 0, tenantDayMicros: 1.5 }, "peek")).toThrow(
      /peek.tenantDayMicros/,
    );
  });

  it("is the rule a model job item's spend read before it follows", () => {
    const job = (before: unknown) =>
      jobOf("job-1", 1, { items: [{ ...jobItemOf(1), before: before as never }] });
    const kept = normalizeNewModelJob(job({ sessionMicros: 1, tenantDayMicros: 2 })).job;
    expect(kept.items[0]?.before).toEqual({ sessionMicros: 1, tenantDayMicros: 2 });
    const error = (() => {
      try {
        normalizeNewModelJob(job({ sessionMicros: 1, tenantDayMicros: -1 }));
      } catch (e) {
        return e as ValidationError;
      }
    })();
    expect(error?.path).toMatch(/before\.tenantDayMicros$/);
  });
});
