import { type PriceTable, priceUsage, type UsageEvidence } from "@alma-harness/core";
import type { ChatWireUsage } from "../openai-chat/wire.js";

/**
 * OpenRouter usage is the Chat Completions shape (`prompt_tokens` includes cache reads and
 * writes) plus `server_tool_use_details.web_search_requests`, `cost` and `cost_details`. The
 * neutral `Usage` carries counts, not money: the charge is computed from the price table, and
 * `usage.cost` (what OpenRouter billed, openrouter.ai/docs/use-cases/usage-accounting) checks it.
 */
export { chatEvidence as openRouterEvidence } from "../openai-chat/usage.js";

/** How far the table may be from `usage.cost`: rounding of the reported float, never a price change. */
export const COST_TOLERANCE = Object.freeze({ micros: 2, fraction: 0.01 });

/**
 * The cross-check of one call. When OpenRouter reports a `cost` (not BYOK, where `cost` is
 * OpenRouter's fee alone) and the table prices the call, a difference beyond `COST_TOLERANCE`
 * makes the evidence `unpriced` (the reason names both amounts): the table no longer describes
 * what was billed, so the call is not settled from it. A call the table cannot price, or without a
 * reported cost, keeps its evidence (the governed call decides on the table alone).
 */
export function crossCheckCost(
  evidence: UsageEvidence,
  raw: ChatWireUsage | undefined,
  model: string,
  prices: PriceTable,
): UsageEvidence {
  if (evidence.status !== "known" || !raw || raw.is_byok === true) return evidence;
  const cost = raw.cost;
  if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) return evidence;
  const priced = priceUsage(prices, model, evidence.usage);
  if (priced.status !== "priced") return evidence;
  const reported = Math.round(cost * 1e6);
  const tolerance = Math.max(COST_TOLERANCE.micros, Math.ceil(reported * COST_TOLERANCE.fraction));
  if (Math.abs(priced.usdMicros - reported) <= tolerance) return evidence;
  return {
    status: "unpriced",
    usage: evidence.usage,
    reason: `OpenRouter billed ${reported} µ$ (usage.cost) but ${prices.version} prices the call at ${priced.usdMicros} µ$`,
    ...(evidence.upstream !== undefined ? { upstream: evidence.upstream } : {}),
  };
}
