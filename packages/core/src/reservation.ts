import type { BudgetCaps } from "./caps.js";
import type { ModelRequest } from "./model.js";
import {
  type ModelPrice,
  type PriceTable,
  type Rates,
  ratePicosPerToken,
  webSearchUsdPerRequest,
} from "./pricing.js";
import type { ModelChoice, ServiceTier } from "./routing.js";
import { utf8Length } from "./snapshot.js";

/**
 * The worst-case price of one call, reserved against every block cap before dispatch (spec:
 * caps under concurrency). The bound, in tokens:
 * - input: one token per UTF-8 byte of the request's JSON (system, messages, tools, output schema),
 *   plus `FRAME_TOKENS` per message and once for the request (role and turn markers). Tokenizers
 *   in use (BPE over bytes) never make more tokens than bytes, so this is an upper bound; media is
 *   counted by its encoded bytes, which is far above the providers' image and page token counts;
 * - output: `maxOutputTokens`;
 * - each at the dearest rate the call can reach: every long-context band of the requested tier, and
 *   for input the dearest of input, cache write (5m, 1h) and cache read;
 * - a provider search tool at its `maxUses` (absent: `MAX_SEARCH_USES`, the most a tool may declare).
 * The reservation is held from the claim until the call settles (the rest is released then), until
 * it is cancelled before dispatch, or until its expiry after the journal's deadline.
 */
export const FRAME_TOKENS = 16;
export const MAX_SEARCH_USES = 100;

const PICO_PER_MICRO = 1_000_000n;

/**
 * The JSON text of what a request carries to the model: its system, messages, tools and output
 * schema (media as they are in the request). One measure of a request's size: `inputTokenBound`
 * counts its UTF-8 bytes, `requestChars` its characters.
 */
function requestText(request: ModelRequest): string {
  return JSON.stringify({
    system: request.system,
    messages: request.messages,
    tools: request.tools,
    ...(request.output ? { output: request.output } : {}),
  });
}

/**
 * A request's size as `maxRequestChars` bounds it (spec: refused-request): the characters (UTF-16
 * code units, as JavaScript's `length` and `maxInputChars` count them) of its JSON text (above).
 */
export function requestChars(request: ModelRequest): number {
  return requestText(request).length;
}

/** An upper bound of the input tokens a request can be billed for (see above). */
export function inputTokenBound(request: ModelRequest): number {
  return utf8Length(requestText(request)) + FRAME_TOKENS * (request.messages.length + 1);
}

function reachable(price: ModelPrice, tier: ServiceTier): Rates[] {
  const out: Rates[] = [];
  const base = tier === "standard" ? price.rates : price.tiers?.[tier];
  if (base) out.push(base);
  for (const band of price.bands ?? []) {
    const rates = tier === "standard" ? band.rates : band.tiers?.[tier];
    if (rates) out.push(rates);
  }
  return out;
}

function dearest(
  rows: readonly Rates[],
  pick: (r: Rates) => readonly (number | undefined)[],
): bigint {
  let best = 0n;
  for (const row of rows) {
    for (const rate of pick(row)) {
      if (rate === undefined) continue;
      const picos = ratePicosPerToken(rate);
      if (picos > best) best = picos;
    }
  }
  return best;
}

/**
 * The most a call can cost, in whole micro-dollars, or undefined when the table cannot price it
 * (the caller refuses such a call before this is asked: see `unpricedBeforeDispatch`).
 */
export function worstCaseMicros(
  table: PriceTable,
  choice: ModelChoice,
  request: ModelRequest,
): number | undefined {
  const price = Object.hasOwn(table.models, choice.model) ? table.models[choice.model] : undefined;
  if (!price) return undefined;
  const rows = reachable(price, choice.serviceTier ?? "standard");
  if (rows.length === 0) return undefined;
  const inputRate = dearest(rows, (r) => [r.input, r.cacheWrite5m, r.cacheWrite1h, r.cacheRead]);
  const outputRate = dearest(rows, (r) => [r.output]);
  let picos =
    BigInt(inputTokenBound(request)) * inputRate + BigInt(request.maxOutputTokens) * outputRate;
  const perSearch = webSearchUsdPerRequest(price);
  for (const tool of request.providerTools ?? []) {
    if (perSearch === undefined) return undefined;
    picos +=
      BigInt(tool.maxUses ?? MAX_SEARCH_USES) * ratePicosPerToken(perSearch) * PICO_PER_MICRO;
  }
  return Number((picos + PICO_PER_MICRO - 1n) / PICO_PER_MICRO);
}

/** The persistent block caps a store checks a reservation against, in micro-dollars. */
export interface ReservationLimits {
  readonly perSessionUsd?: number;
  readonly perTenantDayUsd?: number;
}

export function persistentBlockLimits(caps: BudgetCaps): ReservationLimits {
  const out: { perSessionUsd?: number; perTenantDayUsd?: number } = {};
  if (caps.perSessionUsd?.onExceeded === "block") out.perSessionUsd = caps.perSessionUsd.usdMicros;
  if (caps.perTenantDayUsd?.onExceeded === "block")
    out.perTenantDayUsd = caps.perTenantDayUsd.usdMicros;
  return Object.freeze(out);
}
