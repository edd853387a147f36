import type { ProviderError } from "@alma-harness/core";
import { abortedError, type ErrorFacts, networkError, refusalFacts } from "./errors.js";
import type { FetchLike } from "./types.js";

/** An error body longer than this is cut before parsing: it is diagnostics, not data. */
const MAX_ERROR_BODY = 64 * 1024;

export interface PostSpec {
  readonly provider: string;
  readonly fetch: FetchLike;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  readonly signal: AbortSignal;
  readonly now: () => number;
  /** Classifies a non-2xx answer once, with the adapter's rules. */
  readonly classify: (facts: ErrorFacts) => ProviderError;
}

/** A non-2xx answer: the response arrived (the provider saw the request), then it refused. */
export class HttpRefusal extends Error {
  constructor(readonly error: ProviderError) {
    super(error.message);
  }
}

/**
 * POSTs a JSON body and returns the streaming response. Throws `ProviderError` `cancelled` or
 * `timeout` when the signal fires, `network` when no answer came, and an `HttpRefusal` wrapping the
 * classified `ProviderError` for a non-2xx status.
 */
export async function postJson(spec: PostSpec): Promise<Response> {
  let response: Response;
  try {
    response = await spec.fetch(spec.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...spec.headers },
      body: JSON.stringify(spec.body),
      signal: spec.signal,
    });
  } catch (error) {
    if (spec.signal.aborted) throw abortedError(spec.provider, spec.signal, error);
    throw networkError(spec.provider, error);
  }
  if (response.ok) return response;
  const text = await readBounded(response, spec).catch((error: unknown) => {
    if (spec.signal.aborted) throw abortedError(spec.provider, spec.signal, error);
    return "";
  });
  const should = response.headers.get("x-should-retry")?.trim().toLowerCase();
  const facts: ErrorFacts = {
    ...refusalFacts(spec.provider, response, text, spec.now),
    ...(should === "true" || should === "false" ? { shouldRetry: should === "true" } : {}),
    pristine: true,
  };
  throw new HttpRefusal(spec.classify(facts));
}

async function readBounded(response: Response, spec: PostSpec): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < MAX_ERROR_BODY) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    if (spec.signal.aborted || text.length >= MAX_ERROR_BODY)
      await reader.cancel().catch(() => undefined);
  }
  return text.slice(0, MAX_ERROR_BODY);
}

/** Joins a base URL and a path without doubling slashes. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`;
}

/** The provider's request id from the response headers, bounded. */
export function requestIdOf(headers: Headers, names: readonly string[]): string | undefined {
  for (const name of names) {
    const value = headers.get(name);
    if (value) return value.slice(0, 200);
  }
  return undefined;
}
