import { AlmaError } from "./errors.js";
import type { FailureKind } from "./failure-kinds.js";

export { FAILURE_KINDS, type FailureKind } from "./failure-kinds.js";

/**
 * Proof that a provider refused a request before streaming anything, with zero usage. Only these
 * kinds exist; each is bound to its provider, and never at the batch tier.
 */
export type RejectionKind =
  | "anthropic_rate_limit_v1"
  | "anthropic_overloaded_v1"
  | "openai_rate_limit_v1";
export const REJECTION_PROVIDERS: Readonly<Record<RejectionKind, string>> = Object.freeze({
  anthropic_rate_limit_v1: "anthropic",
  anthropic_overloaded_v1: "anthropic",
  openai_rate_limit_v1: "openai",
});

export interface RejectionProof {
  readonly kind: RejectionKind;
  readonly provider: string;
  readonly status: number;
}

export interface ProviderErrorInit {
  readonly kind: FailureKind;
  readonly provider: string;
  readonly status?: number;
  readonly retryable?: boolean;
  readonly retryAfterMs?: number;
  readonly rejection?: RejectionProof;
  readonly cause?: unknown;
}

const RETRYABLE: ReadonlySet<FailureKind> = new Set([
  "rate_limited",
  "overloaded",
  "server",
  "network",
  "timeout",
]);

/**
 * Adapters throw this, classified once at the adapter. `retryable` says whether the same request
 * unchanged may succeed later; it never authorizes replaying an admitted operation.
 */
export class ProviderError extends AlmaError {
  readonly kind: FailureKind;
  readonly provider: string;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly rejection?: RejectionProof;

  constructor(message: string, init: ProviderErrorInit) {
    super(`provider_${init.kind}`, message, {
      retryable: init.retryable ?? RETRYABLE.has(init.kind),
      cause: init.cause,
    });
    this.kind = init.kind;
    this.provider = init.provider;
    if (init.status !== undefined) this.status = init.status;
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs;
    if (init.rejection !== undefined) {
      if (
        REJECTION_PROVIDERS[init.rejection.kind] !== init.provider ||
        init.rejection.provider !== init.provider
      ) {
        throw new TypeError(`a ${init.rejection.kind} proof cannot come from ${init.provider}`);
      }
      this.rejection = Object.freeze({ ...init.rejection });
    }
  }
}

/** The one failure a finished turn reports, as data. */
export interface TurnFailure {
  readonly kind: FailureKind;
  readonly message: string;
  readonly retryable: boolean;
  readonly provider?: string;
  readonly status?: number;
}

export function failureOf(error: unknown): TurnFailure {
  if (error instanceof ProviderError) {
    return {
      kind: error.kind,
      message: error.message,
      retryable: error.retryable,
      provider: error.provider,
      ...(error.status !== undefined ? { status: error.status } : {}),
    };
  }
  return {
    kind: "unknown",
    message: error instanceof Error ? error.message : String(error),
    retryable: false,
  };
}
