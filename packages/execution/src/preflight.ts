import {
  type BudgetCaps,
  type ModelChoice,
  type ModelPrice,
  type ModelRequest,
  type PriceTable,
  type Rates,
  type ServiceTier,
  type UnpricedReason,
  validateId,
  webSearchUsdPerRequest,
} from "@alma-harness/core";

/**
 * What a call could spend that the table cannot price, known before dispatch, or undefined. Fails
 * closed on every row the request can reach: the model, the requested tier (in every long-context
 * band), the cache write row of the requested duration and the cache read row (a one-hour write is
 * priced at its own row), and the per-request search price when a provider tool is advertised.
 */
export function unpricedBeforeDispatch(
  prices: PriceTable,
  choice: ModelChoice,
  request: ModelRequest,
): UnpricedReason | undefined {
  const price: ModelPrice | undefined = Object.hasOwn(prices.models, choice.model)
    ? prices.models[choice.model]
    : undefined;
  if (!price) return "model";
  const tier: ServiceTier = choice.serviceTier ?? "standard";
  const rows = reachableRates(price, tier);
  if (rows === undefined) return "tier";
  const cache = request.cache;
  if (cache) {
    // Each duration the request writes (the prefix's, and the tail's when it has its own) needs its row.
    const ttls = new Set([cache.ttl, cache.tailTtl ?? cache.ttl]);
    for (const rates of rows) {
      for (const ttl of ttls)
        if (rates[ttl === "1h" ? "cacheWrite1h" : "cacheWrite5m"] === undefined)
          return ttl === "1h" ? "cache_write_1h" : "cache_write_5m";
      if (rates.cacheRead === undefined) return "cache_read";
    }
  }
  if ((request.providerTools?.length ?? 0) > 0 && webSearchUsdPerRequest(price) === undefined)
    return "web_search";
  return undefined;
}

/** The rates a call at `tier` may be priced with (base row and every band), or undefined when one is missing. */
function reachableRates(price: ModelPrice, tier: ServiceTier): readonly Rates[] | undefined {
  const base = tier === "standard" ? price.rates : price.tiers?.[tier];
  if (!base) return undefined;
  const out: Rates[] = [base];
  for (const band of price.bands ?? []) {
    const rates = tier === "standard" ? band.rates : band.tiers?.[tier];
    if (!rates) return undefined;
    out.push(rates);
  }
  return out;
}

const CAP_NAMES = new Set(["perTurnUsd", "perSessionUsd", "perTenantDayUsd"]);

/** Checks caps already normalized by `normalizeBudgetCaps`; anything else is a `TypeError`. */
export function checkNormalizedCaps(caps: unknown): BudgetCaps {
  if (caps === null || typeof caps !== "object" || Array.isArray(caps))
    throw new TypeError("caps must be the result of normalizeBudgetCaps");
  for (const [name, cap] of Object.entries(caps)) {
    if (!CAP_NAMES.has(name))
      throw new TypeError(`caps.${name} is not a cap (perTurnUsd, perSessionUsd, perTenantDayUsd)`);
    if (cap === undefined) continue;
    const c = cap as { usdMicros?: unknown; onExceeded?: unknown };
    if (typeof c.usdMicros !== "number" || !Number.isSafeInteger(c.usdMicros) || c.usdMicros < 0) {
      throw new TypeError(
        `caps.${name}.usdMicros must be a non-negative integer (normalize caps with normalizeBudgetCaps)`,
      );
    }
    if (c.onExceeded !== "block" && c.onExceeded !== "warn")
      throw new TypeError(`caps.${name}.onExceeded must be "block" or "warn"`);
  }
  return caps as BudgetCaps;
}

export function checkConsumers(consumers: unknown): readonly string[] {
  if (consumers === undefined) return Object.freeze([]);
  if (!Array.isArray(consumers) || consumers.length > 16)
    throw new TypeError("consumers must be an array of at most 16 ids");
  const out = consumers.map((c, i) => validateId(`consumers[${i}]`, c));
  if (new Set(out).size !== out.length) throw new TypeError("consumers must be distinct");
  return Object.freeze(out);
}
