import { type ServiceTier, type Usage, type UsageEvidence, usageProblem } from "@alma-harness/core";

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
export function compactUsage(fields: { readonly [K in keyof Usage]?: Usage[K] | undefined }): Usage {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) out[key] = value;
  return out as unknown as Usage;
}
