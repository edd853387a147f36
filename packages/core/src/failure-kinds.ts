/**
 * Why a call or a turn failed, one closed vocabulary across every provider and seam:
 * - `rate_limited` (429), `overloaded` (529 / overloaded_error), `server` (other 5xx): retryable;
 * - `context_window`: the prompt is too long for the model;
 * - `invalid_request` (other 4xx), `unsupported` (refused by `validate` before any I/O);
 * - `auth` (401/403), `not_found` (404: model or route);
 * - `network` (no HTTP answer), `timeout` (the per-round deadline), `cancelled` (the caller's signal);
 * - `stream_invalid` (the stream broke an integrity rule), `stream_torn` (no terminal frame);
 * - `provider_error` (an error event inside a stream), `unknown`.
 */
export const FAILURE_KINDS = [
  "rate_limited",
  "overloaded",
  "server",
  "context_window",
  "invalid_request",
  "unsupported",
  "auth",
  "not_found",
  "network",
  "timeout",
  "cancelled",
  "stream_invalid",
  "stream_torn",
  "provider_error",
  "unknown",
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];
