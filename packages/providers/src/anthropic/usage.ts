import type { CacheTtl, ServiceTier, UsageEvidence } from "@alma-harness/core";
import { asCount, asRecord } from "../shared/neutral.js";
import { compactUsage, evidenceOf } from "../shared/usage.js";
import type { WireUsage } from "./wire.js";

/** Later usage objects override earlier ones field by field (message_delta counts are cumulative). */
export function mergeUsage(into: WireUsage, next: unknown): void {
  const record = asRecord(next);
  if (!record) return;
  for (const [key, value] of Object.entries(record)) {
    if (value !== null && value !== undefined) (into as Record<string, unknown>)[key] = value;
  }
}

const TIERS: Readonly<Record<string, ServiceTier>> = {
  standard: "standard",
  priority: "priority",
  batch: "batch",
};
const PRICED_GEO = new Set(["global", "not_available"]);

/**
 * Anthropic usage → evidence. `input_tokens` already excludes cache reads and writes; writes are
 * split 5m / 1h from `cache_creation` when reported. Without that split, writes are attributed to
 * the one TTL the request asked for; with no TTL asked, the evidence is `unpriced`. A served tier
 * or inference region with no price row is `unpriced` too. `finalSeen` is false when the stream
 * never carried the closing usage (message_delta): then nothing is known.
 */
export function anthropicEvidence(
  raw: WireUsage,
  finalSeen: boolean,
  requestTtl: CacheTtl | undefined,
): UsageEvidence {
  const input = asCount(raw.input_tokens);
  const output = asCount(raw.output_tokens);
  if (!finalSeen || input === undefined || output === undefined) return { status: "unknown" };
  const reasons: string[] = [];
  const writes = cacheWrites(raw, requestTtl, reasons);
  let serviceTier: ServiceTier | undefined;
  if (typeof raw.service_tier === "string") {
    serviceTier = TIERS[raw.service_tier];
    if (!serviceTier) reasons.push(`served service tier "${raw.service_tier}" has no neutral tier`);
  }
  if (typeof raw.inference_geo === "string" && !PRICED_GEO.has(raw.inference_geo)) {
    reasons.push(`inference_geo "${raw.inference_geo}" is priced differently`);
  }
  const usage = compactUsage({
    inputTokens: input,
    outputTokens: output,
    ...writes,
    cacheReadTokens: asCount(raw.cache_read_input_tokens),
    reasoningTokens: asCount(raw.output_tokens_details?.thinking_tokens),
    webSearchRequests: asCount(raw.server_tool_use?.web_search_requests),
    serviceTier,
  });
  return evidenceOf(usage, reasons.length > 0 ? reasons.join("; ") : undefined);
}

function cacheWrites(
  raw: WireUsage,
  ttl: CacheTtl | undefined,
  reasons: string[],
): { cacheWrite5mTokens?: number; cacheWrite1hTokens?: number } {
  const split = raw.cache_creation;
  const w5 = asCount(split?.ephemeral_5m_input_tokens);
  const w1 = asCount(split?.ephemeral_1h_input_tokens);
  if (w5 !== undefined || w1 !== undefined)
    return { cacheWrite5mTokens: w5 ?? 0, cacheWrite1hTokens: w1 ?? 0 };
  const total = asCount(raw.cache_creation_input_tokens);
  if (total === undefined) return {};
  if (total === 0) return { cacheWrite5mTokens: 0, cacheWrite1hTokens: 0 };
  if (ttl === "1h") return { cacheWrite1hTokens: total };
  if (ttl === "5m") return { cacheWrite5mTokens: total };
  reasons.push("cache writes reported without their TTL split");
  return { cacheWrite5mTokens: total };
}
