import { type FailureKind, ProviderError, type RejectionProof } from "@alma-harness/core";

/** What an adapter learned about one failure, HTTP or in-stream, before classifying it. */
export interface ErrorFacts {
  readonly provider: string;
  /** The HTTP status; absent for an error event inside a 200 stream. */
  readonly status?: number;
  /** Provider error type (`overloaded_error`, `rate_limit_error`, `insufficient_quota`, …). */
  readonly type?: string;
  /** Provider error code (`context_length_exceeded`, `rate_limit_exceeded`, …). */
  readonly code?: string;
  /** A finer provider code (Anthropic `error.details.error_code`). */
  readonly detail?: string;
  readonly message: string;
  readonly retryAfterMs?: number;
  /** The provider's own `x-should-retry` header: it wins over the kind's default `retryable`. */
  readonly shouldRetry?: boolean;
  /** The error's metadata names flagged input or moderation reasons (OpenRouter's 403). */
  readonly flagged?: boolean;
  /** True when nothing was streamed and no usage was reported (pre-stream refusal). */
  readonly pristine: boolean;
}

/** What an adapter adds to the shared classification. */
export interface Classified {
  readonly kind: FailureKind;
  readonly retryable?: boolean;
  readonly rejection?: RejectionProof;
}

const MAX_MESSAGE = 500;

/** The overflow messages the providers document (Anthropic's two shapes, OpenAI's, servers'). */
const CONTEXT_PATTERNS = [
  /prompt is too long: \d+ tokens > \d+ maximum/i,
  /prompt is too long/i,
  /input length and `?max_tokens`? exceed context limit/i,
  /maximum context length/i,
  /context[_ ]length[_ ]exceeded/i,
  /too many tokens in (the )?(prompt|request|input)/i,
];

/**
 * A context overflow: the dedicated code, or a documented overflow message under the provider's
 * own error type for it (`invalid_request_error`, Anthropic and OpenAI) or under no type (routers
 * and servers that send none). A message that merely mentions a "context window" is not one.
 */
export function isContextOverflow(facts: Pick<ErrorFacts, "code" | "type" | "message">): boolean {
  if (facts.code === "context_length_exceeded" || facts.type === "context_length_exceeded")
    return true;
  if (facts.type !== undefined && facts.type !== "invalid_request_error") return false;
  return CONTEXT_PATTERNS.some((p) => p.test(facts.message));
}

/** The classification every adapter starts from: status first, then the provider's type/code. */
export function baseKind(f: ErrorFacts): FailureKind {
  const status = f.status;
  if ((status === undefined || status === 400 || status === 413) && isContextOverflow(f))
    return "context_window";
  if (f.type === "overloaded_error" || status === 529) return "overloaded";
  if (status === 429 || f.type === "rate_limit_error" || f.code === "rate_limit_exceeded")
    return "rate_limited";
  if (status === 408 || f.type === "timeout_error") return "timeout";
  // 409 (a conflict at the provider): transient, retried by the official SDKs like a 5xx.
  if (status === 409) return "server";
  if (status === undefined) {
    if (f.type === "api_error" || f.type === "server_error" || f.code === "server_error")
      return "server";
    return "provider_error";
  }
  if (status >= 500) return "server";
  if (status === 401 || status === 403) return "auth";
  if (status === 404) return "not_found";
  return "invalid_request";
}

export function toProviderError(f: ErrorFacts, c: Classified, cause?: unknown): ProviderError {
  const where = f.status !== undefined ? `HTTP ${f.status}` : "stream error";
  const label = f.type ?? f.code;
  const text = f.message.length > MAX_MESSAGE ? `${f.message.slice(0, MAX_MESSAGE)}…` : f.message;
  return new ProviderError(`${f.provider} ${where}${label ? ` (${label})` : ""}: ${text}`, {
    kind: c.kind,
    provider: f.provider,
    ...(f.status !== undefined ? { status: f.status } : {}),
    ...retryableOf(f, c),
    ...(f.retryAfterMs !== undefined ? { retryAfterMs: f.retryAfterMs } : {}),
    ...(c.rejection ? { rejection: c.rejection } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

/**
 * The provider's `x-should-retry` wins over the kind's default, as the official SDKs do, except
 * that it never revives a failure the adapter ruled final (a spent quota, a spend limit).
 */
function retryableOf(f: ErrorFacts, c: Classified): { retryable?: boolean } {
  if (c.retryable === false) return { retryable: false };
  if (f.shouldRetry !== undefined) return { retryable: f.shouldRetry };
  return c.retryable !== undefined ? { retryable: c.retryable } : {};
}

/** `validate` refusals: a control this adapter cannot honor, refused before any I/O. */
export function unsupported(provider: string, message: string): ProviderError {
  return new ProviderError(`${provider}: ${message}`, { kind: "unsupported", provider });
}

/** The caller's signal fired: `timeout` for `AbortSignal.timeout`, else `cancelled`. */
export function abortedError(
  provider: string,
  signal: AbortSignal,
  cause?: unknown,
): ProviderError {
  const reason: unknown = signal.reason;
  const timeout =
    typeof reason === "object" &&
    reason !== null &&
    (reason as { name?: unknown }).name === "TimeoutError";
  return new ProviderError(
    timeout ? `${provider}: the call timed out` : `${provider}: the call was cancelled`,
    {
      kind: timeout ? "timeout" : "cancelled",
      provider,
      cause: cause ?? reason,
    },
  );
}

export function networkError(provider: string, cause: unknown): ProviderError {
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new ProviderError(`${provider}: no HTTP answer (${detail})`, {
    kind: "network",
    provider,
    cause,
  });
}

export function tornError(provider: string, detail: string, cause?: unknown): ProviderError {
  return new ProviderError(`${provider}: the stream ended without a terminal frame (${detail})`, {
    kind: "stream_torn",
    provider,
    ...(cause !== undefined ? { cause } : {}),
  });
}

export function invalidStreamError(
  provider: string,
  detail: string,
  cause?: unknown,
): ProviderError {
  return new ProviderError(`${provider}: the stream broke the protocol (${detail})`, {
    kind: "stream_invalid",
    provider,
    ...(cause !== undefined ? { cause } : {}),
  });
}

/**
 * `retry-after-ms` (milliseconds) wins over `retry-after` (seconds, or an HTTP date read against
 * `now`). Absent, unparsable or negative values give `undefined`.
 */
export function retryAfterMs(headers: Headers, now: () => number): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now());
}

/** Reads the common `{error: {type, code, message}}` shapes; tolerant of anything else. */
export function errorFields(body: unknown): {
  type?: string;
  code?: string;
  detail?: string;
  message?: string;
  flagged?: boolean;
} {
  if (typeof body !== "object" || body === null) return {};
  const outer = body as Record<string, unknown>;
  const inner =
    typeof outer.error === "object" && outer.error !== null
      ? (outer.error as Record<string, unknown>)
      : outer;
  const str = (v: unknown) =>
    typeof v === "string" ? v : typeof v === "number" ? String(v) : undefined;
  const type = str(inner.type);
  const code = str(inner.code);
  const message = str(inner.message) ?? (typeof outer.error === "string" ? outer.error : undefined);
  const details =
    typeof inner.details === "object" && inner.details !== null
      ? (inner.details as Record<string, unknown>)
      : {};
  const detail = str(details.error_code);
  const metadata =
    typeof inner.metadata === "object" && inner.metadata !== null
      ? (inner.metadata as Record<string, unknown>)
      : {};
  const flagged = Array.isArray(metadata.reasons) || metadata.flagged_input !== undefined;
  return {
    ...(type ? { type } : {}),
    ...(code ? { code } : {}),
    ...(detail ? { detail } : {}),
    ...(message ? { message } : {}),
    ...(flagged ? { flagged } : {}),
  };
}

/**
 * What a non-2xx answer says, read once for every adapter: its status, the fields of its JSON body
 * (a body that is not JSON is read as text), a message (the body's, else its first 200 characters,
 * else the status text) and `Retry-After`. The caller adds what only it knows (`pristine`, and the
 * `x-should-retry` header a model call honours).
 */
export function refusalFacts(
  provider: string,
  response: Response,
  text: string,
  now: () => number,
): Omit<ErrorFacts, "pristine"> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const fields = errorFields(parsed);
  const retryAfter = retryAfterMs(response.headers, now);
  return {
    provider,
    status: response.status,
    ...fields,
    message:
      fields.message ?? (text.trim().slice(0, 200) || response.statusText || "no error body"),
    ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
  };
}
