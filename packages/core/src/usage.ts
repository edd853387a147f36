import type { ServiceTier } from "./routing.js";

/**
 * Token usage of one model call, normalized across providers: `inputTokens` is ordinary input and
 * excludes cache reads and writes, which have their own price terms. Reasoning tokens are billed as
 * output and are reported inside `outputTokens`; `reasoningTokens` is informational. An absent
 * optional counter means the provider did not report it; zero means it reported zero.
 */
export interface Usage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cacheWrite5mTokens?: number;
  readonly cacheWrite1hTokens?: number;
  readonly cacheReadTokens?: number;
  readonly reasoningTokens?: number;
  readonly webSearchRequests?: number;
  /** The tier the wire says served the call; pricing follows it. */
  readonly serviceTier?: ServiceTier;
}

/**
 * What is known of a call's usage after it ended:
 * - `known`: counts and attribution, may be priced;
 * - `unpriced`: counts known but attribution unresolved (never priced);
 * - `unknown`: the stream ended without usage (never a fabricated zero);
 * - `not_dispatched`: no byte left; `cause` says why when the transition saw it.
 * `upstream` names who actually served the call when a router says so (OpenRouter's `provider`).
 */
export type UsageEvidence =
  | { readonly status: "known"; readonly usage: Usage; readonly upstream?: string }
  | {
      readonly status: "unpriced";
      readonly usage: Usage;
      readonly reason: string;
      readonly upstream?: string;
    }
  | { readonly status: "unknown" }
  | { readonly status: "not_dispatched"; readonly cause?: NotDispatchedCause };

/**
 * Why a claimed call was never sent. `scope_fenced`: an operator's scope fence refused its dispatch
 * (`ExecutionStore.dispatch`); `expired`: the sweep closed it, and only the sweep records it.
 */
export type NotDispatchedCause =
  | "aborted"
  | "audit"
  | "store"
  | "input"
  | "invalid"
  | "scope_fenced"
  | "expired";

/** The counters of a `Usage` record (all but `serviceTier`). */
export const USAGE_COUNTERS = [
  "inputTokens",
  "outputTokens",
  "cacheWrite5mTokens",
  "cacheWrite1hTokens",
  "cacheReadTokens",
  "reasoningTokens",
  "webSearchRequests",
] as const;

/** Problem with a usage record, or undefined when every counter is a safe non-negative integer. */
export function usageProblem(usage: Usage): string | undefined {
  for (const key of USAGE_COUNTERS) {
    const value = usage[key];
    if (value === undefined && (key === "inputTokens" || key === "outputTokens"))
      return `${key} is required`;
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0))
      return `${key} must be a safe non-negative integer`;
  }
  if (usage.reasoningTokens !== undefined && usage.reasoningTokens > usage.outputTokens) {
    return "reasoningTokens cannot exceed outputTokens";
  }
  return undefined;
}

export function addUsage(a: Usage, b: Usage): Usage {
  const out: Record<string, number> = {};
  for (const key of USAGE_COUNTERS) {
    const x = a[key];
    const y = b[key];
    if (x !== undefined || y !== undefined) out[key] = (x ?? 0) + (y ?? 0);
  }
  return out as unknown as Usage;
}

export const ZERO_USAGE: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0 });

export function totalTokens(usage: Usage): number {
  return (
    usage.inputTokens +
    usage.outputTokens +
    (usage.cacheReadTokens ?? 0) +
    (usage.cacheWrite5mTokens ?? 0) +
    (usage.cacheWrite1hTokens ?? 0)
  );
}
