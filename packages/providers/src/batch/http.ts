import {
  type FailureKind,
  type ModelJobItemResult,
  type ModelRequest,
  ProviderError,
} from "@alma-harness/core";
import { abortedError, type ErrorFacts, networkError, refusalFacts } from "../shared/errors.js";
import { asString } from "../shared/neutral.js";
import type { FetchLike } from "../shared/types.js";

/** One call of a batch API: JSON in or a form, the answer's text out; a non-2xx answer classified once, by the adapter's rules. */
export interface BatchCall {
  readonly provider: string;
  readonly fetch: FetchLike;
  readonly now: () => number;
  readonly classify: (facts: ErrorFacts) => ProviderError;
  readonly headers: Readonly<Record<string, string>>;
}

/** Sends one request and returns the body's text; throws `ProviderError` (`network`, `cancelled`/`timeout`, or the classified refusal). */
export async function send(
  call: BatchCall,
  url: string,
  init: {
    readonly method: "GET" | "POST";
    readonly json?: unknown;
    readonly form?: FormData;
    readonly signal?: AbortSignal;
  },
): Promise<string> {
  const headers: Record<string, string> = { ...call.headers };
  let body: string | FormData | undefined;
  if (init.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.json);
  } else if (init.form !== undefined) body = init.form;
  let response: Response;
  try {
    response = await call.fetch(url, {
      method: init.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
  } catch (error) {
    if (init.signal?.aborted) throw abortedError(call.provider, init.signal, error);
    throw networkError(call.provider, error);
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (init.signal?.aborted) throw abortedError(call.provider, init.signal, error);
    throw networkError(call.provider, error);
  }
  if (response.ok) return text;
  // A batch call is never a pre-stream refusal of a model call: no rejection proof is taken here.
  const facts: ErrorFacts = {
    ...refusalFacts(call.provider, response, text, call.now),
    pristine: false,
  };
  throw call.classify(facts);
}

/** A JSON object answer, or a `ProviderError` (`provider_error`) for anything else. */
export function objectOf(provider: string, text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw malformed(provider, `${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** A GET whose answer is one JSON object (see `send` and `objectOf`). */
export async function getJson(
  call: BatchCall,
  url: string,
  what: string,
  signal?: AbortSignal,
): Promise<Record<string, unknown>> {
  const text = await send(call, url, { method: "GET", ...(signal ? { signal } : {}) });
  return objectOf(call.provider, text, what);
}

/** Creates a batch with one POST; the answer's `id` is the batch's (an answer without one is malformed). */
export async function createBatch(
  call: BatchCall,
  url: string,
  json: unknown,
  signal?: AbortSignal,
): Promise<{ readonly batchId: string }> {
  const text = await send(call, url, { method: "POST", json, ...(signal ? { signal } : {}) });
  const id = asString(objectOf(call.provider, text, "the created batch").id);
  if (!id) throw malformed(call.provider, "the created batch has no id");
  return { batchId: id };
}

/** The lines of a JSONL answer, each a JSON object (blank lines skipped). */
export function jsonLines(provider: string, text: string, what: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.length > 0)
    .map((line, i) => objectOf(provider, line, `${what} line ${i + 1}`));
}

/** An answer that is not the documented shape: a provider error, never retried as if nothing happened. */
export function malformed(provider: string, message: string): ProviderError {
  return new ProviderError(message, { kind: "provider_error", provider, retryable: false });
}

/** A provider's per-item error type, as the closed failure vocabulary. */
export function itemFailure(type: unknown, status?: number): FailureKind {
  const byType: Readonly<Record<string, FailureKind>> = {
    invalid_request_error: "invalid_request",
    rate_limit_error: "rate_limited",
    overloaded_error: "overloaded",
    api_error: "server",
    server_error: "server",
    authentication_error: "auth",
    permission_error: "auth",
    not_found_error: "not_found",
  };
  if (typeof type === "string" && Object.hasOwn(byType, type)) return byType[type] as FailureKind;
  if (status === 429) return "rate_limited";
  if (status !== undefined && status >= 500) return "server";
  if (status !== undefined && status >= 400) return "invalid_request";
  return "unknown";
}

/** Results by custom id: a line repeating a custom id is refused (the provider answers each item once). */
export function oncePerItem(
  provider: string,
  results: readonly ModelJobItemResult[],
): readonly ModelJobItemResult[] {
  const seen = new Set<string>();
  for (const r of results) {
    if (seen.has(r.customId))
      throw malformed(provider, `custom id ${r.customId} is answered twice`);
    seen.add(r.customId);
  }
  return results;
}

/** The request as a batch endpoint reads it: the endpoint is the tier, so the request names none. */
export function unbatched(request: ModelRequest): ModelRequest {
  if (request.serviceTier === undefined) return request;
  const { serviceTier: _tier, ...rest } = request;
  return rest;
}
