import { ValidationError } from "./errors.js";
import { deepFreeze } from "./freeze.js";
import type { ServiceTier } from "./routing.js";
import type { Usage } from "./usage.js";

/**
 * Money is exact: every amount Alma reports is an integer number of micro-dollars (`usdMicros`,
 * 1 USD = 1,000,000). Rates are written as USD per million tokens (the providers' own unit) with
 * at most six decimals, converted once to integer pico-dollars per token, multiplied in BigInt,
 * and each call's total is rounded up to the next whole micro-dollar. No floating drift on sums.
 */
export interface Rates {
  readonly input: number;
  readonly output: number;
  readonly cacheWrite5m?: number;
  readonly cacheWrite1h?: number;
  readonly cacheRead?: number;
}

/** Rates that apply once a call's whole prompt exceeds `aboveInputTokens` (long-context bands). */
export interface PriceBand {
  readonly aboveInputTokens: number;
  readonly rates: Rates;
  readonly tiers?: Partial<Record<ServiceTier, Rates>>;
}

export interface ModelPrice {
  /** Rates for the standard tier. */
  readonly rates: Rates;
  /** Rates per other served tier; a tier with no row is unpriced (never guessed from standard). */
  readonly tiers?: Partial<Record<ServiceTier, Rates>>;
  readonly bands?: readonly PriceBand[];
  /**
   * USD per web search request (seed 001's spelling); absent means a call that searched is
   * unpriced. Read only through `webSearchUsdPerRequest(price)`.
   */
  readonly webSearchUsdPerRequest?: number;
  /** The older spelling of `webSearchUsdPerRequest`, still read: the same price. Both given must agree. */
  readonly webSearchPerRequestUsd?: number;
}

/**
 * A model's price per web search request under either spelling, the one reader of both
 * (`webSearchUsdPerRequest` is seed 001's, `webSearchPerRequestUsd` the older one); undefined when
 * neither is given. Two different values are refused: a table means one price.
 */
export function webSearchUsdPerRequest(price: ModelPrice, path = "price"): number | undefined {
  const { webSearchUsdPerRequest: seed, webSearchPerRequestUsd: old } = price;
  if (seed !== undefined && old !== undefined && seed !== old)
    throw new ValidationError(
      `${path}.webSearchUsdPerRequest`,
      "one_price",
      `${path}.webSearchUsdPerRequest and its older spelling webSearchPerRequestUsd differ`,
    );
  return seed ?? old;
}

export interface PriceTable {
  readonly version: string;
  readonly models: Readonly<Record<string, ModelPrice>>;
}

export type UnpricedReason =
  | "model"
  | "tier"
  | "input"
  | "output"
  | "cache_write_5m"
  | "cache_write_1h"
  | "cache_read"
  | "web_search";

export type PricedUsage =
  | {
      readonly status: "priced";
      readonly usdMicros: number;
      readonly serviceTier: ServiceTier;
      readonly priceVersion: string;
    }
  | {
      readonly status: "unpriced";
      readonly missing: UnpricedReason;
      readonly model: string;
      readonly serviceTier: ServiceTier;
    };

const PICO_PER_MICRO = 1_000_000n;

/** USD-per-million-tokens → integer pico-dollars per token; rejects more than six decimals. */
export function ratePicosPerToken(usdPerMtok: number, path = "rate"): bigint {
  if (!Number.isFinite(usdPerMtok) || usdPerMtok < 0)
    throw new ValidationError(path, "non_negative", `${path} must be a non-negative number`);
  const scaled = Math.round(usdPerMtok * 1e6);
  // Exact: a rate with at most six decimals is the double nearest to `scaled / 1e6`, and that
  // division is correctly rounded, so any other value had a seventh decimal (or float noise).
  if (!Number.isSafeInteger(scaled) || scaled / 1e6 !== usdPerMtok) {
    throw new ValidationError(path, "six_decimals", `${path} must have at most six decimals`);
  }
  return BigInt(scaled);
}

/** USD amount → integer micro-dollars (at most six decimals). */
export function usdToMicros(usd: number, path = "usd"): number {
  return Number(ratePicosPerToken(usd, path));
}

export function microsToUsd(micros: number): string {
  const sign = micros < 0 ? "-" : "";
  const abs = Math.abs(micros);
  return `${sign}${Math.floor(abs / 1e6)}.${String(abs % 1e6).padStart(6, "0")}`;
}

function promptTokens(usage: Usage): number {
  return (
    usage.inputTokens +
    (usage.cacheReadTokens ?? 0) +
    (usage.cacheWrite5mTokens ?? 0) +
    (usage.cacheWrite1hTokens ?? 0)
  );
}

function selectRates(price: ModelPrice, tier: ServiceTier, usage: Usage): Rates | undefined {
  let base: Rates | undefined = tier === "standard" ? price.rates : price.tiers?.[tier];
  const prompt = promptTokens(usage);
  let best: PriceBand | undefined;
  for (const band of price.bands ?? []) {
    if (prompt > band.aboveInputTokens && (!best || band.aboveInputTokens > best.aboveInputTokens))
      best = band;
  }
  if (best) base = tier === "standard" ? best.rates : best.tiers?.[tier];
  return base;
}

/**
 * Prices one call's usage. Fails closed: an unknown model, a served tier without a row, a counter
 * without its rate (a 1h cache write without `cacheWrite1h`) or a search without a per-request
 * price is `unpriced`, naming what is missing — never a guess, never zero.
 */
export function priceUsage(table: PriceTable, model: string, usage: Usage): PricedUsage {
  const tier: ServiceTier = usage.serviceTier ?? "standard";
  const price = Object.hasOwn(table.models, model) ? table.models[model] : undefined;
  if (!price) return { status: "unpriced", missing: "model", model, serviceTier: tier };
  const rates = selectRates(price, tier, usage);
  if (!rates) return { status: "unpriced", missing: "tier", model, serviceTier: tier };
  let picos = 0n;
  const terms: [number | undefined, number | undefined, UnpricedReason][] = [
    [usage.inputTokens, rates.input, "input"],
    [usage.outputTokens, rates.output, "output"],
    [usage.cacheWrite5mTokens, rates.cacheWrite5m, "cache_write_5m"],
    [usage.cacheWrite1hTokens, rates.cacheWrite1h, "cache_write_1h"],
    [usage.cacheReadTokens, rates.cacheRead, "cache_read"],
  ];
  for (const [count, rate, name] of terms) {
    if (count === undefined || count === 0) continue;
    if (rate === undefined) return { status: "unpriced", missing: name, model, serviceTier: tier };
    picos += BigInt(count) * ratePicosPerToken(rate, name);
  }
  const searches = usage.webSearchRequests ?? 0;
  if (searches > 0) {
    const perSearch = webSearchUsdPerRequest(price);
    if (perSearch === undefined)
      return { status: "unpriced", missing: "web_search", model, serviceTier: tier };
    picos +=
      BigInt(searches) * ratePicosPerToken(perSearch, "webSearchUsdPerRequest") * PICO_PER_MICRO;
  }
  const micros = (picos + PICO_PER_MICRO - 1n) / PICO_PER_MICRO;
  return {
    status: "priced",
    usdMicros: Number(micros),
    serviceTier: tier,
    priceVersion: table.version,
  };
}

/** Whether a model and tier can be priced at all, checked before dispatch (zero-cost refusal). */
export function isPriceable(
  table: PriceTable,
  model: string,
  tier: ServiceTier = "standard",
): boolean {
  const price = Object.hasOwn(table.models, model) ? table.models[model] : undefined;
  if (!price) return false;
  return tier === "standard" || price.tiers?.[tier] !== undefined;
}

/** Tables `normalizePriceTable` returned: handed back, they are recognized by identity and not checked again. */
const normalizedTables = new WeakSet<PriceTable>();

/**
 * Validates a price table once (every rate has at most six decimals) and returns a frozen copy; a
 * table this function returned is returned as it is (one check, carried forward by identity).
 */
export function normalizePriceTable(table: PriceTable): PriceTable {
  if (typeof table === "object" && table !== null && normalizedTables.has(table)) return table;
  if (!table || typeof table.version !== "string" || table.version.length === 0) {
    throw new ValidationError("prices.version", "string", "a price table needs a version");
  }
  const check = (rates: Rates, path: string) => {
    ratePicosPerToken(rates.input, `${path}.input`);
    ratePicosPerToken(rates.output, `${path}.output`);
    for (const k of ["cacheWrite5m", "cacheWrite1h", "cacheRead"] as const) {
      const v = rates[k];
      if (v !== undefined) ratePicosPerToken(v, `${path}.${k}`);
    }
  };
  for (const [model, price] of Object.entries(table.models)) {
    check(price.rates, `prices.models.${model}.rates`);
    for (const [tier, r] of Object.entries(price.tiers ?? {}))
      if (r) check(r, `prices.models.${model}.tiers.${tier}`);
    for (const [i, band] of (price.bands ?? []).entries()) {
      const path = `prices.models.${model}.bands[${i}]`;
      if (!Number.isSafeInteger(band.aboveInputTokens) || band.aboveInputTokens < 0) {
        throw new ValidationError(
          `${path}.aboveInputTokens`,
          "non_negative_integer",
          `${path}.aboveInputTokens must be a non-negative integer`,
        );
      }
      check(band.rates, path);
      for (const [tier, r] of Object.entries(band.tiers ?? {}))
        if (r) check(r, `${path}.tiers.${tier}`);
    }
    const perSearch = webSearchUsdPerRequest(price, `prices.models.${model}`);
    const given =
      price.webSearchUsdPerRequest === undefined
        ? "webSearchPerRequestUsd"
        : "webSearchUsdPerRequest";
    if (perSearch !== undefined) ratePicosPerToken(perSearch, `prices.models.${model}.${given}`);
  }
  const out = deepFreeze(structuredClone(table));
  normalizedTables.add(out);
  return out;
}
