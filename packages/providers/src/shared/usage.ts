import { type ServiceTier, type Usage, type UsageEvidence, usageProblem } from "@alma-harness/core";
import { asCount } from "./neutral.js";

/**
 * Builds the evidence for counts the provider reported: `known` when attribution is resolved,
 * `unpriced` (never priced) when something needed to price it is not, or when the counters
 * contradict each other.
 */
export function evidenceOf(usage: Usage, unresolved: string | undefined): UsageEvidence {
  const problem = usageProblem(usage);
  if (problem) return { status: "unpriced", usage, reason: `malformed usage: ${problem}` };
  if (unresolved) return { status: "unpriced", usage, reason: unresolved };
  return { status: "known", usage };
}

/** OpenAI's served `service_tier` → the neutral tier, or why it cannot be attributed. */
export function openaiServedTier(value: unknown): { tier?: ServiceTier; unresolved?: string } {
  if (value === undefined || value === null) return {};
  switch (value) {
    case "default":
    case "standard":
      return { tier: "standard" };
    case "flex":
      return { tier: "flex" };
    case "priority":
      return { tier: "priority" };
    case "batch":
      return { tier: "batch" };
    default:
      return { unresolved: `served service tier ${JSON.stringify(value)} has no neutral tier` };
  }
}

/** Drops `undefined` fields so "not reported" stays absent rather than a key with no value. */
export function compactUsage(
  fields: { readonly [K in keyof Usage]?: Usage[K] | undefined },
): Usage {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as unknown as Usage;
}

/** An OpenAI-style usage report, as read off the wire (each count still unchecked). */
export interface PromptCounts {
  /** Includes the cache reads and writes. */
  readonly prompt: unknown;
  readonly output: unknown;
  readonly cached: unknown;
  readonly written: unknown;
  readonly reasoning: unknown;
  readonly webSearches: number | undefined;
}

/**
 * OpenAI-style usage → evidence: the prompt count includes cache reads and writes, so ordinary
 * input is what remains (seed 001). One write TTL is reported, so writes go to the default-TTL slot
 * (`cacheWrite5mTokens`). Without a prompt or an output count the evidence is `unknown`.
 */
export function promptCountsEvidence(
  counts: PromptCounts,
  tier: { tier?: ServiceTier; unresolved?: string },
): UsageEvidence {
  const prompt = asCount(counts.prompt);
  const output = asCount(counts.output);
  if (prompt === undefined || output === undefined) return { status: "unknown" };
  const cached = asCount(counts.cached);
  const written = asCount(counts.written);
  const usage = compactUsage({
    inputTokens: prompt - (cached ?? 0) - (written ?? 0),
    outputTokens: output,
    cacheReadTokens: cached,
    cacheWrite5mTokens: written,
    reasoningTokens: asCount(counts.reasoning),
    webSearchRequests: counts.webSearches,
    serviceTier: tier.tier,
  });
  return evidenceOf(usage, tier.unresolved);
}
