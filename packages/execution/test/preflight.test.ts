import type { PriceTable } from "@alma-harness/core";
import { unpricedBeforeDispatch } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, PRICES, REQUEST } from "./fixtures.js";

describe("unpricedBeforeDispatch: every row a request can reach", () => {
  const cases: [string, Partial<typeof CHOICE>, Partial<typeof REQUEST>, string | undefined][] = [
    ["a priced model at the standard tier", {}, {}, undefined],
    ["an unknown model", { model: "ghost" }, {}, "model"],
    ["a tier with its own row", { serviceTier: "priority" }, {}, undefined],
    ["a tier without a row (never guessed from standard)", { serviceTier: "flex" }, {}, "tier"],
    ["a 5-minute cache with its rows", {}, { cache: { ttl: "5m" } }, undefined],
    ["a 1-hour cache with its rows", {}, { cache: { ttl: "1h" } }, undefined],
    [
      "a cache on a model without a write row",
      { model: "bare" },
      { cache: { ttl: "5m" } },
      "cache_write_5m",
    ],
    [
      "an advertised search with a per-request price",
      {},
      { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] },
      undefined,
    ],
    [
      "an advertised search without one",
      { model: "bare" },
      { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] },
      "web_search",
    ],
  ];
  for (const [name, choice, request, missing] of cases) {
    it(name, () => {
      expect(
        unpricedBeforeDispatch(PRICES, { ...CHOICE, ...choice }, { ...REQUEST, ...request }),
      ).toBe(missing);
    });
  }

  it("a one-hour write needs its own row even when the five-minute row exists", () => {
    const prices: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 1, output: 1, cacheWrite5m: 1, cacheRead: 1 } } },
    };
    expect(unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "1h" } })).toBe(
      "cache_write_1h",
    );
    expect(
      unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "5m" } }),
    ).toBeUndefined();
  });

  it("a tail of its own duration needs its own write row too (issue 19: 1h prefix, 5m tail)", () => {
    const only1h: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 1, output: 1, cacheWrite1h: 2, cacheRead: 1 } } },
    };
    expect(
      unpricedBeforeDispatch(only1h, CHOICE, { ...REQUEST, cache: { ttl: "1h" } }),
    ).toBeUndefined();
    expect(
      unpricedBeforeDispatch(only1h, CHOICE, { ...REQUEST, cache: { ttl: "1h", tailTtl: "5m" } }),
    ).toBe("cache_write_5m");
    expect(
      unpricedBeforeDispatch(PRICES, CHOICE, { ...REQUEST, cache: { ttl: "1h", tailTtl: "5m" } }),
    ).toBeUndefined();
  });

  it("a cache needs the read row too", () => {
    const prices: PriceTable = {
      version: "v",
      models: { m: { rates: { input: 1, output: 1, cacheWrite5m: 1 } } },
    };
    expect(unpricedBeforeDispatch(prices, CHOICE, { ...REQUEST, cache: { ttl: "5m" } })).toBe(
      "cache_read",
    );
  });

  it("a long-context band without the tier's row is unpriced", () => {
    const prices: PriceTable = {
      version: "v",
      models: {
        m: {
          rates: { input: 1, output: 1 },
          tiers: { priority: { input: 2, output: 2 } },
          bands: [{ aboveInputTokens: 200_000, rates: { input: 2, output: 2 } }],
        },
      },
    };
    expect(unpricedBeforeDispatch(prices, { ...CHOICE, serviceTier: "priority" }, REQUEST)).toBe(
      "tier",
    );
    expect(unpricedBeforeDispatch(prices, CHOICE, REQUEST)).toBeUndefined();
  });
});

// seed 001 (001_1e3222a344f96376.txt): "neither does an unpriced service tier or an unpriced web
// search (webSearchUsdPerRequest)" — the seed's spelling prices an advertised search before dispatch.
it("an advertised search priced under the seed's spelling webSearchUsdPerRequest is priceable", () => {
  const search = { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] } as const;
  const prices = (price: Record<string, number>): PriceTable => ({
    version: "v",
    models: { [CHOICE.model]: { rates: { input: 1, output: 1 }, ...price } },
  });
  const request = { ...REQUEST, ...search };
  expect(unpricedBeforeDispatch(prices({ webSearchUsdPerRequest: 0.01 }), CHOICE, request)).toBe(
    undefined,
  );
  expect(unpricedBeforeDispatch(prices({}), CHOICE, request)).toBe("web_search");
});
