import type {
  ModelClient,
  ModelRequest,
  ModelStreamEvent,
  UsageEvidence,
} from "@alma-harness/core";

/** The platform `fetch`, or any function with its shape (tests, proxies, tracing). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** What every adapter factory accepts. */
export interface BaseClientOptions {
  /** The client's id, the `clientId` a `ModelChoice` names. Defaults per adapter. */
  readonly id?: string;
  readonly apiKey?: string;
  /** Base URL without a trailing path segment the adapter adds (`…/v1`). */
  readonly baseURL?: string;
  readonly fetch?: FetchLike;
  /** Extra request headers, sent on every call (never logged by the adapter). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Clock for `retry-after` HTTP dates; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * One dispatch with its evidence kept apart from the content (seed 001, single-dispatch evidence).
 * `events` may be consumed once; the transport opens on the first `next()`. `evidence` settles
 * when the stream ends by any path and never rejects: `known` or `unpriced` after a complete
 * stream, `not_dispatched` when no byte left, `unknown` when billing is unresolved (a network
 * failure, a torn or cancelled stream, an early `return()`).
 */
export interface SingleDispatchStream {
  readonly events: AsyncIterable<ModelStreamEvent>;
  readonly evidence: Promise<UsageEvidence>;
  /** The provider's request id (bounded to 200 characters), once response headers arrived. */
  requestRef(): string | undefined;
}

/** A `ModelClient` of this package: the core seam plus the single-dispatch face. */
export interface ProviderClient extends ModelClient {
  streamEvidence(request: ModelRequest, signal: AbortSignal): SingleDispatchStream;
}
