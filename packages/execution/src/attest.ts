import {
  type ModelChoice,
  type ModelClient,
  ProviderError,
  REJECTION_PROVIDERS,
  type RejectionKind,
  type Usage,
} from "@alma-harness/core";
import type { StreamSeen } from "./stream-validate.js";

/**
 * Providers whose zero-usage `context_window` refusal the loop accepts as attested (spec:
 * safe-context-rejection-rotation): Anthropic answers an over-long prompt before generation. Other
 * providers' context errors stay uncertain until their parity is accepted.
 */
export const CONTEXT_REJECTION_PROVIDERS: ReadonlySet<string> = new Set(["anthropic"]);

function zeroUsage(usage: Usage): boolean {
  return (
    usage.inputTokens === 0 &&
    usage.outputTokens === 0 &&
    (usage.cacheReadTokens ?? 0) === 0 &&
    (usage.cacheWrite5mTokens ?? 0) === 0 &&
    (usage.cacheWrite1hTokens ?? 0) === 0 &&
    (usage.webSearchRequests ?? 0) === 0
  );
}

/** Nothing streamed: no content event, and any usage the stream reported is known and zero. */
function pristine(seen: StreamSeen): boolean {
  if (seen.content > 0) return false;
  const usage = seen.usage;
  return usage === undefined || (usage.status === "known" && zeroUsage(usage.usage));
}

/**
 * The proof a failed call carries, or undefined. Only a `ProviderError` from the call's own
 * provider, thrown before anything streamed, outside the batch tier and while the turn was not
 * cancelled, can attest: a `RejectionProof` (bound to its provider in `REJECTION_PROVIDERS`), or a
 * `context_window` refusal from a provider in `CONTEXT_REJECTION_PROVIDERS`. Anything else is a
 * generic failure and grants nothing.
 */
export function attestedRejection(
  error: unknown,
  client: ModelClient,
  choice: ModelChoice,
  seen: StreamSeen,
  turnSignal: AbortSignal,
): RejectionKind | "context_window" | undefined {
  if (turnSignal.aborted || !(error instanceof ProviderError)) return undefined;
  if (error.provider !== client.provider || choice.serviceTier === "batch" || !pristine(seen))
    return undefined;
  const proof = error.rejection;
  if (proof !== undefined)
    return REJECTION_PROVIDERS[proof.kind] === client.provider ? proof.kind : undefined;
  if (error.kind === "context_window" && CONTEXT_REJECTION_PROVIDERS.has(client.provider))
    return "context_window";
  return undefined;
}
