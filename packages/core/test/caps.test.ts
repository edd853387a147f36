import {
  type BudgetCaps,
  blockingCapReached,
  type CostReceipt,
  capsCrossedBy,
  costReceiptWarnings,
  normalizeBudgetCaps,
  normalizePerTurnCap,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";

const ONE_USD = 1_000_000;
const zero = { turn: 0, session: 0, tenantDay: 0 };

function receipt(capsCrossed: CostReceipt["capsCrossed"]): CostReceipt {
  return {
    settlementId: "set_1",
    operationId: "op_1",
    turnId: "turn_1",
    kind: "main",
    clientId: "anthropic",
    model: "sonnet",
    serviceTier: "standard",
    usage: { inputTokens: 10, outputTokens: 5 },
    usdMicros: 42,
    priceVersion: "v1",
    capsCrossed,
  };
}

describe("normalizePerTurnCap", () => {
  it("reads a number as a blocking cap in whole micro-dollars", () => {
    expect(normalizePerTurnCap(0.5)).toEqual({ usdMicros: 500_000, onExceeded: "block" });
    expect(normalizePerTurnCap(0)).toEqual({ usdMicros: 0, onExceeded: "block" });
    expect(normalizePerTurnCap(12.345678)).toEqual({ usdMicros: 12_345_678, onExceeded: "block" });
  });

  it("keeps an explicit policy", () => {
    expect(normalizePerTurnCap({ usd: 2, onExceeded: "warn" })).toEqual({
      usdMicros: 2_000_000,
      onExceeded: "warn",
    });
    expect(normalizePerTurnCap({ usd: 2, onExceeded: "block" })).toEqual({
      usdMicros: 2_000_000,
      onExceeded: "block",
    });
  });

  it("returns a frozen copy detached from the input", () => {
    const input = { usd: 1, onExceeded: "warn" as const };
    const cap = normalizePerTurnCap(input);
    (input as { usd: number }).usd = 100;
    expect(cap.usdMicros).toBe(ONE_USD);
    expect(Object.isFrozen(cap)).toBe(true);
  });

  it("turns -0 into 0", () => {
    expect(Object.is(normalizePerTurnCap(-0).usdMicros, 0)).toBe(true);
  });

  const malformed: [string, unknown][] = [
    ["a negative number", -1],
    ["a tiny negative number", -0.000001],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a numeric string", "1"],
    ["null", null],
    ["undefined", undefined],
    ["an array", [1]],
    ["a boolean", true],
    ["more than six decimals below one dollar", 0.0000001],
    ["more than six decimals above one dollar", 1.0000001],
    ["more than six decimals in a large cap", 250.0000004],
    ["float noise", 0.1 + 0.2],
    ["an unknown field", { usd: 1, onExceeded: "warn", extra: true }],
    ["a misspelled field", { usd: 1, onExceed: "warn" }],
    ["a missing usd", { onExceeded: "warn" }],
    ["a string usd", { usd: "1", onExceeded: "warn" }],
    ["a negative usd", { usd: -1, onExceeded: "warn" }],
    ["a NaN usd", { usd: Number.NaN, onExceeded: "block" }],
    ["usd with seven decimals", { usd: 0.5000001, onExceeded: "block" }],
    ["a missing policy", { usd: 1 }],
    ["an unknown policy", { usd: 1, onExceeded: "stop" }],
  ];
  for (const [label, input] of malformed) {
    it(`throws TypeError for ${label}`, () => {
      expect(() => normalizePerTurnCap(input)).toThrow(TypeError);
    });
  }

  it("names the cap in its error", () => {
    expect(() => normalizePerTurnCap(-1)).toThrow(/perTurnUsd/);
    expect(() => normalizePerTurnCap({ usd: 1.0000001, onExceeded: "warn" })).toThrow(
      /perTurnUsd.*six decimals/,
    );
  });
});

describe("normalizeBudgetCaps", () => {
  it("defaults: a per-turn number blocks, session and tenant-day numbers warn", () => {
    expect(
      normalizeBudgetCaps({ perTurnUsd: 0.25, perSessionUsd: 5, perTenantDayUsd: 100 }),
    ).toEqual({
      perTurnUsd: { usdMicros: 250_000, onExceeded: "block" },
      perSessionUsd: { usdMicros: 5_000_000, onExceeded: "warn" },
      perTenantDayUsd: { usdMicros: 100_000_000, onExceeded: "warn" },
    });
  });

  it("blocks on session and tenant-day caps only when asked to", () => {
    expect(
      normalizeBudgetCaps({
        perSessionUsd: { usd: 5, onExceeded: "block" },
        perTenantDayUsd: { usd: 9, onExceeded: "block" },
      }),
    ).toEqual({
      perSessionUsd: { usdMicros: 5_000_000, onExceeded: "block" },
      perTenantDayUsd: { usdMicros: 9_000_000, onExceeded: "block" },
    });
    expect(normalizeBudgetCaps({ perTurnUsd: { usd: 1, onExceeded: "warn" } })).toEqual({
      perTurnUsd: { usdMicros: ONE_USD, onExceeded: "warn" },
    });
  });

  it("treats absent caps and absent fields as no cap", () => {
    expect(normalizeBudgetCaps(undefined)).toEqual({});
    expect(normalizeBudgetCaps({})).toEqual({});
    const caps = normalizeBudgetCaps({ perTurnUsd: undefined, perSessionUsd: 1 });
    expect(Object.keys(caps)).toEqual(["perSessionUsd"]);
  });

  it("returns a frozen copy", () => {
    const caps = normalizeBudgetCaps({ perTurnUsd: 1 });
    expect(Object.isFrozen(caps)).toBe(true);
    expect(Object.isFrozen(caps.perTurnUsd)).toBe(true);
  });

  const malformed: [string, unknown][] = [
    ["null", null],
    ["a number", 5],
    ["an array", [1]],
    ["an unknown cap", { perTurnUsd: 1, perDayUsd: 5 }],
    ["a misspelled cap", { perSessionUSD: 5 }],
    ["a negative cap", { perSessionUsd: -5 }],
    ["a NaN cap", { perTenantDayUsd: Number.NaN }],
    ["a string cap", { perTurnUsd: "0.5" }],
    ["a cap with seven decimals", { perSessionUsd: 5.0000001 }],
    [
      "a cap object with an unknown field",
      { perSessionUsd: { usd: 5, onExceeded: "block", scope: "org" } },
    ],
    ["a cap object with a bad policy", { perTenantDayUsd: { usd: 5, onExceeded: "Block" } }],
    ["a null cap", { perTurnUsd: null }],
  ];
  for (const [label, input] of malformed) {
    it(`throws TypeError for ${label}`, () => {
      expect(() => normalizeBudgetCaps(input)).toThrow(TypeError);
    });
  }

  it("names the offending cap", () => {
    expect(() => normalizeBudgetCaps({ perDayUsd: 5 })).toThrow(/perDayUsd/);
    expect(() => normalizeBudgetCaps({ perSessionUsd: -5 })).toThrow(/perSessionUsd/);
  });
});

describe("capsCrossedBy", () => {
  const caps = normalizeBudgetCaps({ perTurnUsd: 1, perSessionUsd: 2, perTenantDayUsd: 3 });

  it("does not count reaching a cap exactly as crossing it", () => {
    expect(
      capsCrossedBy(
        caps,
        { turn: 999_999, session: 0, tenantDay: 0 },
        { turn: ONE_USD, session: 0, tenantDay: 0 },
      ),
    ).toEqual([]);
  });

  it("counts one micro-dollar over as crossed", () => {
    expect(
      capsCrossedBy(
        caps,
        { turn: ONE_USD, session: 0, tenantDay: 0 },
        { turn: ONE_USD + 1, session: 0, tenantDay: 0 },
      ),
    ).toEqual(["perTurnUsd"]);
  });

  it("reports a crossing once: a total already over the cap does not cross it again", () => {
    expect(
      capsCrossedBy(
        caps,
        { turn: ONE_USD + 1, session: 0, tenantDay: 0 },
        { turn: 5 * ONE_USD, session: 0, tenantDay: 0 },
      ),
    ).toEqual([]);
  });

  it("lists every crossed cap in cap-name order", () => {
    const after = { turn: 3 * ONE_USD + 1, session: 3 * ONE_USD + 1, tenantDay: 3 * ONE_USD + 1 };
    expect(capsCrossedBy(caps, zero, after)).toEqual([
      "perTurnUsd",
      "perSessionUsd",
      "perTenantDayUsd",
    ]);
    expect(
      capsCrossedBy(caps, zero, { turn: 0, session: 2 * ONE_USD + 1, tenantDay: 2 * ONE_USD + 1 }),
    ).toEqual(["perSessionUsd"]);
  });

  it("ignores caps that are not configured", () => {
    expect(
      capsCrossedBy(normalizeBudgetCaps({}), zero, {
        turn: 10 ** 12,
        session: 10 ** 12,
        tenantDay: 10 ** 12,
      }),
    ).toEqual([]);
  });

  it("treats any spend over a zero cap as crossing it", () => {
    const zeroCaps = normalizeBudgetCaps({ perSessionUsd: 0 });
    expect(capsCrossedBy(zeroCaps, zero, zero)).toEqual([]);
    expect(capsCrossedBy(zeroCaps, zero, { turn: 1, session: 1, tenantDay: 1 })).toEqual([
      "perSessionUsd",
    ]);
  });
});

describe("blockingCapReached", () => {
  const caps = normalizeBudgetCaps({
    perTurnUsd: 1,
    perSessionUsd: { usd: 2, onExceeded: "block" },
    perTenantDayUsd: 3,
  });

  it("does not refuse one micro-dollar under a block cap", () => {
    expect(blockingCapReached(caps, { turn: 999_999, session: 0, tenantDay: 0 })).toBeUndefined();
  });

  it("refuses at exactly the cap and over it", () => {
    expect(blockingCapReached(caps, { turn: ONE_USD, session: 0, tenantDay: 0 })).toBe(
      "perTurnUsd",
    );
    expect(blockingCapReached(caps, { turn: ONE_USD + 1, session: 0, tenantDay: 0 })).toBe(
      "perTurnUsd",
    );
    expect(blockingCapReached(caps, { turn: 0, session: 2 * ONE_USD, tenantDay: 0 })).toBe(
      "perSessionUsd",
    );
  });

  it("never refuses on a warn cap", () => {
    expect(
      blockingCapReached(caps, { turn: 0, session: 0, tenantDay: 1_000 * ONE_USD }),
    ).toBeUndefined();
    const warnOnly = normalizeBudgetCaps({ perTurnUsd: { usd: 1, onExceeded: "warn" } });
    expect(
      blockingCapReached(warnOnly, { turn: 50 * ONE_USD, session: 0, tenantDay: 0 }),
    ).toBeUndefined();
  });

  it("names the per-turn cap first when several are reached", () => {
    expect(blockingCapReached(caps, { turn: ONE_USD, session: 2 * ONE_USD, tenantDay: 0 })).toBe(
      "perTurnUsd",
    );
  });

  it("refuses every call under a zero block cap", () => {
    expect(blockingCapReached(normalizeBudgetCaps({ perTurnUsd: 0 }), zero)).toBe("perTurnUsd");
  });
});

describe("costReceiptWarnings", () => {
  const caps: BudgetCaps = normalizeBudgetCaps({
    perTurnUsd: { usd: 1, onExceeded: "warn" },
    perSessionUsd: { usd: 2, onExceeded: "block" },
  });

  it("gives one warning per crossed cap with the cap's configured action", () => {
    expect(costReceiptWarnings(receipt(["perTurnUsd", "perSessionUsd"]), caps)).toEqual([
      { cap: "perTurnUsd", action: "warn", operationId: "op_1" },
      { cap: "perSessionUsd", action: "block", operationId: "op_1" },
    ]);
  });

  it("gives none when nothing was crossed", () => {
    expect(costReceiptWarnings(receipt([]), caps)).toEqual([]);
  });

  it("keeps precomputed evidence for a cap no longer configured, as a warning", () => {
    expect(costReceiptWarnings(receipt(["perTenantDayUsd"]), caps)).toEqual([
      { cap: "perTenantDayUsd", action: "warn", operationId: "op_1" },
    ]);
  });
});
