import {
  isPriceable,
  microsToUsd,
  normalizePriceTable,
  type PricedUsage,
  type PriceTable,
  priceUsage,
  ratePicosPerToken,
  type Usage,
  usdToMicros,
  ValidationError,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";

const TABLE: PriceTable = {
  version: "2025-06-01",
  models: {
    sonnet: {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
      tiers: {
        priority: { input: 5, output: 25, cacheWrite5m: 6.25, cacheRead: 0.5 },
        batch: { input: 1.5, output: 7.5 },
      },
      bands: [
        {
          aboveInputTokens: 200_000,
          rates: { input: 6, output: 22.5, cacheWrite5m: 7.5, cacheRead: 0.6 },
        },
      ],
      webSearchPerRequestUsd: 0.01,
    },
    flash: { rates: { input: 0.075, output: 0.3 } },
    tiny: { rates: { input: 0.000001, output: 0.000001 } },
  },
};

function micros(result: PricedUsage): number {
  if (result.status !== "priced")
    throw new Error(`expected priced, got unpriced (${result.missing})`);
  return result.usdMicros;
}

function usage(partial: Partial<Usage>): Usage {
  return { inputTokens: 0, outputTokens: 0, ...partial };
}

describe("priceUsage: exact integer micro-dollars", () => {
  it("prices a mixed call exactly", () => {
    const result = priceUsage(
      TABLE,
      "sonnet",
      usage({
        inputTokens: 123_456,
        outputTokens: 89_012,
        cacheReadTokens: 50_000,
        cacheWrite5mTokens: 10_000,
      }),
    );
    // 123,456×3 + 89,012×15 + 50,000×0.3 + 10,000×3.75 USD per Mtok, in micro-dollars:
    // 370,368 + 1,335,180 + 15,000 + 37,500
    expect(result).toEqual({
      status: "priced",
      usdMicros: 1_758_048,
      serviceTier: "standard",
      priceVersion: "2025-06-01",
    });
  });

  it("prices rates like 0.075 and 3.75 per Mtok without floating error", () => {
    expect(micros(priceUsage(TABLE, "flash", usage({ inputTokens: 1_000_000 })))).toBe(75_000);
    expect(
      micros(
        priceUsage(TABLE, "flash", usage({ inputTokens: 1_000_000, outputTokens: 1_000_000 })),
      ),
    ).toBe(375_000);
    // (sonnet stays under its 200,000-token band here)
    expect(micros(priceUsage(TABLE, "sonnet", usage({ cacheWrite5mTokens: 100_000 })))).toBe(
      375_000,
    );
  });

  it("rounds each call up to the next whole micro-dollar, and not past an exact one", () => {
    // 1 token at 0.075/Mtok is 0.075 micro-dollars: charged 1.
    expect(micros(priceUsage(TABLE, "flash", usage({ inputTokens: 1 })))).toBe(1);
    // 1 token at 0.000001/Mtok is one pico-dollar: still 1 micro-dollar, never 0.
    expect(micros(priceUsage(TABLE, "tiny", usage({ inputTokens: 1 })))).toBe(1);
    // Exactly one micro-dollar (1/3 token at 3/Mtok would not be an integer; 1 token at 1/Mtok is):
    expect(
      micros(
        priceUsage(
          { version: "v", models: { m: { rates: { input: 1, output: 1 } } } },
          "m",
          usage({ inputTokens: 1 }),
        ),
      ),
    ).toBe(1);
    // 40 tokens at 0.075 = 3 micro-dollars exactly; 41 tokens = 3.075 → 4.
    expect(micros(priceUsage(TABLE, "flash", usage({ inputTokens: 40 })))).toBe(3);
    expect(micros(priceUsage(TABLE, "flash", usage({ inputTokens: 41 })))).toBe(4);
  });

  it("sums many small calls to an exact integer (no drift)", () => {
    let total = 0;
    let floating = 0;
    for (let i = 0; i < 10_000; i++) {
      const call = micros(
        priceUsage(TABLE, "sonnet", usage({ inputTokens: 8, cacheWrite5mTokens: 8 })),
      );
      // 8×3 + 8×3.75 = 54 micro-dollars, exact per call.
      expect(call).toBe(54);
      total += call;
      floating += (8 * 3 + 8 * 3.75) / 1e6;
    }
    expect(total).toBe(540_000);
    expect(Number.isSafeInteger(total)).toBe(true);
    // The naive float sum does not land on the exact value; the integer one does.
    expect(floating).not.toBe(0.54);
  });

  it("prices 0.1 + 0.2 per Mtok as exactly 0.3", () => {
    const table: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 0.1, output: 0.2 } } },
    };
    expect(
      micros(priceUsage(table, "m", usage({ inputTokens: 1_000_000, outputTokens: 1_000_000 }))),
    ).toBe(300_000);
  });

  it("stays exact for very large counts", () => {
    const table: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 75, output: 150 } } },
    };
    // 10 billion tokens at 75 USD/Mtok = 750,000 USD.
    expect(micros(priceUsage(table, "m", usage({ inputTokens: 10_000_000_000 })))).toBe(
      750_000_000_000,
    );
  });

  it("prices zero usage at zero", () => {
    expect(micros(priceUsage(TABLE, "sonnet", usage({})))).toBe(0);
  });

  it("reports the price version and the served tier", () => {
    const result = priceUsage(TABLE, "sonnet", usage({ inputTokens: 1, serviceTier: "priority" }));
    expect(result).toMatchObject({
      status: "priced",
      serviceTier: "priority",
      priceVersion: "2025-06-01",
    });
  });
});

describe("priceUsage: fails closed", () => {
  it("never prices an unknown model, including prototype names", () => {
    for (const model of ["gpt-unknown", "__proto__", "toString", "constructor", ""]) {
      expect(priceUsage(TABLE, model, usage({ inputTokens: 1 }))).toEqual({
        status: "unpriced",
        missing: "model",
        model,
        serviceTier: "standard",
      });
    }
  });

  it("never prices a served tier without its row, never falling back to standard", () => {
    expect(priceUsage(TABLE, "sonnet", usage({ inputTokens: 10, serviceTier: "flex" }))).toEqual({
      status: "unpriced",
      missing: "tier",
      model: "sonnet",
      serviceTier: "flex",
    });
    expect(
      priceUsage(TABLE, "flash", usage({ inputTokens: 10, serviceTier: "priority" })),
    ).toMatchObject({
      status: "unpriced",
      missing: "tier",
    });
  });

  it("prices a served tier by its own row, not by the standard one", () => {
    expect(
      micros(priceUsage(TABLE, "sonnet", usage({ inputTokens: 100_000, serviceTier: "priority" }))),
    ).toBe(500_000);
    expect(
      micros(priceUsage(TABLE, "sonnet", usage({ inputTokens: 100_000, serviceTier: "batch" }))),
    ).toBe(150_000);
    expect(micros(priceUsage(TABLE, "sonnet", usage({ inputTokens: 100_000 })))).toBe(300_000);
  });

  it("never prices web searches without a per-request price", () => {
    expect(priceUsage(TABLE, "flash", usage({ inputTokens: 10, webSearchRequests: 1 }))).toEqual({
      status: "unpriced",
      missing: "web_search",
      model: "flash",
      serviceTier: "standard",
    });
  });

  it("prices web searches per request when the row exists, and ignores zero searches", () => {
    expect(micros(priceUsage(TABLE, "sonnet", usage({ webSearchRequests: 3 })))).toBe(30_000);
    expect(
      micros(priceUsage(TABLE, "flash", usage({ inputTokens: 40, webSearchRequests: 0 }))),
    ).toBe(3);
  });

  it("never prices a 1h cache write without its row", () => {
    expect(
      priceUsage(
        TABLE,
        "sonnet",
        usage({ inputTokens: 1, cacheWrite1hTokens: 5, serviceTier: "priority" }),
      ),
    ).toEqual({
      status: "unpriced",
      missing: "cache_write_1h",
      model: "sonnet",
      serviceTier: "priority",
    });
    // With the row present (standard tier, under the band) it is priced at 6 per Mtok.
    expect(micros(priceUsage(TABLE, "sonnet", usage({ cacheWrite1hTokens: 100_000 })))).toBe(
      600_000,
    );
  });

  it("never prices a cache read or a 5m cache write without its row", () => {
    expect(priceUsage(TABLE, "flash", usage({ cacheReadTokens: 1 }))).toMatchObject({
      status: "unpriced",
      missing: "cache_read",
    });
    expect(priceUsage(TABLE, "flash", usage({ cacheWrite5mTokens: 1 }))).toMatchObject({
      status: "unpriced",
      missing: "cache_write_5m",
    });
    expect(
      priceUsage(TABLE, "sonnet", usage({ cacheReadTokens: 1, serviceTier: "batch" })),
    ).toMatchObject({
      status: "unpriced",
      missing: "cache_read",
    });
  });

  it("treats a reported zero counter as nothing to price", () => {
    expect(
      micros(
        priceUsage(
          TABLE,
          "flash",
          usage({ inputTokens: 40, cacheReadTokens: 0, cacheWrite1hTokens: 0 }),
        ),
      ),
    ).toBe(3);
  });

  it("throws rather than guesses when an unnormalized table holds a rate with too many decimals", () => {
    const table: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 3.0000001, output: 1 } } },
    };
    expect(() => priceUsage(table, "m", usage({ inputTokens: 1 }))).toThrow(ValidationError);
  });
});

describe("priceUsage: context-length bands", () => {
  it("uses the base rates at the threshold and the band's rates one token over", () => {
    expect(
      micros(priceUsage(TABLE, "sonnet", usage({ inputTokens: 200_000, outputTokens: 1_000 }))),
    ).toBe(600_000 + 15_000);
    // Over the band every token, output included, is priced at the band's rates.
    expect(
      micros(priceUsage(TABLE, "sonnet", usage({ inputTokens: 200_001, outputTokens: 1_000 }))),
    ).toBe(1_200_006 + 22_500);
  });

  it("counts cache reads and writes as prompt when choosing a band", () => {
    const result = priceUsage(
      TABLE,
      "sonnet",
      usage({ inputTokens: 100_000, cacheReadTokens: 100_001 }),
    );
    // 100,000×6 + 100,001×0.6 per Mtok = 600,000 + 60,000.6 → 660,001
    expect(micros(result)).toBe(660_001);
  });

  it("picks the highest band exceeded whatever the order they are listed in", () => {
    const table: PriceTable = {
      version: "v",
      models: {
        m: {
          rates: { input: 1, output: 1 },
          bands: [
            { aboveInputTokens: 1_000, rates: { input: 3, output: 3 } },
            { aboveInputTokens: 100, rates: { input: 2, output: 2 } },
          ],
        },
      },
    };
    expect(micros(priceUsage(table, "m", usage({ inputTokens: 100 })))).toBe(100);
    expect(micros(priceUsage(table, "m", usage({ inputTokens: 1_000 })))).toBe(2_000);
    expect(micros(priceUsage(table, "m", usage({ inputTokens: 1_001 })))).toBe(3_003);
  });

  it("is unpriced when a band lacks the served tier, even if the base table has it", () => {
    expect(
      priceUsage(TABLE, "sonnet", usage({ inputTokens: 250_000, serviceTier: "priority" })),
    ).toMatchObject({
      status: "unpriced",
      missing: "tier",
      serviceTier: "priority",
    });
  });

  it("is unpriced when a band lacks a counter's row the base table had", () => {
    expect(
      priceUsage(TABLE, "sonnet", usage({ inputTokens: 250_000, cacheWrite1hTokens: 1 })),
    ).toMatchObject({
      status: "unpriced",
      missing: "cache_write_1h",
    });
  });
});

describe("rates and USD amounts", () => {
  it("converts USD per Mtok to integer pico-dollars per token", () => {
    expect(ratePicosPerToken(3)).toBe(3_000_000n);
    expect(ratePicosPerToken(0.075)).toBe(75_000n);
    expect(ratePicosPerToken(3.75)).toBe(3_750_000n);
    expect(ratePicosPerToken(0.000001)).toBe(1n);
    expect(ratePicosPerToken(123.456789)).toBe(123_456_789n);
    expect(ratePicosPerToken(600.000001)).toBe(600_000_001n);
    expect(ratePicosPerToken(0)).toBe(0n);
  });

  it("rejects a rate with more than six decimals, small or large", () => {
    for (const rate of [
      0.0000001,
      0.0750001,
      0.5000001,
      1.0000001,
      3.7500004,
      600.0000001,
      0.1 + 0.2,
    ]) {
      let error: unknown;
      try {
        ratePicosPerToken(rate, "prices.models.m.rates.input");
      } catch (caught) {
        error = caught;
      }
      expect(error, String(rate)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).rule).toBe("six_decimals");
      expect((error as ValidationError).path).toBe("prices.models.m.rates.input");
    }
  });

  it("rejects negative and non-finite rates", () => {
    for (const rate of [-1, -0.000001, Number.NaN, Number.POSITIVE_INFINITY]) {
      let error: unknown;
      try {
        ratePicosPerToken(rate);
      } catch (caught) {
        error = caught;
      }
      expect(error, String(rate)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).rule).toBe("non_negative");
    }
  });

  it("converts USD to micro-dollars and back to a fixed six-decimal string", () => {
    expect(usdToMicros(0.1)).toBe(100_000);
    expect(usdToMicros(12.345678)).toBe(12_345_678);
    expect(() => usdToMicros(1.0000001)).toThrow(ValidationError);
    expect(microsToUsd(1_234_567)).toBe("1.234567");
    expect(microsToUsd(5)).toBe("0.000005");
    expect(microsToUsd(0)).toBe("0.000000");
    expect(microsToUsd(-1_500_000)).toBe("-1.500000");
  });
});

describe("isPriceable", () => {
  it("refuses before dispatch what priceUsage could never price", () => {
    expect(isPriceable(TABLE, "sonnet")).toBe(true);
    expect(isPriceable(TABLE, "sonnet", "priority")).toBe(true);
    expect(isPriceable(TABLE, "sonnet", "flex")).toBe(false);
    expect(isPriceable(TABLE, "flash", "batch")).toBe(false);
    expect(isPriceable(TABLE, "unknown")).toBe(false);
    expect(isPriceable(TABLE, "__proto__")).toBe(false);
  });
});

describe("normalizePriceTable", () => {
  it("returns a detached, deeply frozen copy", () => {
    const source = structuredClone(TABLE) as {
      version: string;
      models: Record<string, { rates: { input: number } }>;
    };
    const table = normalizePriceTable(source as PriceTable);
    expect(table).toEqual(TABLE);
    source.models.flash!.rates.input = 99;
    expect(table.models.flash?.rates.input).toBe(0.075);
    expect(Object.isFrozen(table)).toBe(true);
    expect(Object.isFrozen(table.models)).toBe(true);
    expect(Object.isFrozen(table.models.sonnet?.rates)).toBe(true);
    expect(Object.isFrozen(table.models.sonnet?.bands?.[0]?.rates)).toBe(true);
  });

  it("requires a version", () => {
    expect(() => normalizePriceTable({ version: "", models: {} })).toThrow(ValidationError);
  });

  it("rejects a rate with more than six decimals anywhere, naming where", () => {
    const where = (table: PriceTable) => {
      try {
        normalizePriceTable(table);
      } catch (error) {
        return (error as ValidationError).path;
      }
      return "accepted";
    };
    expect(where({ version: "v", models: { m: { rates: { input: 1.0000001, output: 1 } } } })).toBe(
      "prices.models.m.rates.input",
    );
    expect(
      where({
        version: "v",
        models: { m: { rates: { input: 1, output: 1, cacheRead: 0.30000001 } } },
      }),
    ).toBe("prices.models.m.rates.cacheRead");
    expect(
      where({
        version: "v",
        models: {
          m: { rates: { input: 1, output: 1 }, tiers: { flex: { input: 0.5000001, output: 1 } } },
        },
      }),
    ).toBe("prices.models.m.tiers.flex.input");
    expect(
      where({
        version: "v",
        models: {
          m: {
            rates: { input: 1, output: 1 },
            bands: [{ aboveInputTokens: 10, rates: { input: 2, output: 2.0000001 } }],
          },
        },
      }),
    ).toBe("prices.models.m.bands[0].output");
    expect(
      where({
        version: "v",
        models: {
          m: {
            rates: { input: 1, output: 1 },
            bands: [
              {
                aboveInputTokens: 10,
                rates: { input: 2, output: 2 },
                tiers: { priority: { input: 4.0000001, output: 4 } },
              },
            ],
          },
        },
      }),
    ).toBe("prices.models.m.bands[0].tiers.priority.input");
    expect(
      where({
        version: "v",
        models: { m: { rates: { input: 1, output: 1 }, webSearchPerRequestUsd: 0.0100001 } },
      }),
    ).toBe("prices.models.m.webSearchPerRequestUsd");
  });

  it("rejects a band threshold that is not a non-negative integer (it would silently never apply)", () => {
    for (const aboveInputTokens of [Number.NaN, -1, 1.5]) {
      expect(() =>
        normalizePriceTable({
          version: "v",
          models: {
            m: {
              rates: { input: 1, output: 1 },
              bands: [{ aboveInputTokens, rates: { input: 2, output: 2 } }],
            },
          },
        }),
      ).toThrow(ValidationError);
    }
  });
});
