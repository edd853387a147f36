import { AlmaError, SnapshotError } from "@alma-harness/core";

/**
 * The one table from error code to HTTP status. Codes raised by the host and codes of Alma's own
 * errors share it; a code that is not here is a 500 whose message is not shown to the client.
 */
export const STATUS_OF_CODE = {
  bad_request: 400,
  malformed_json: 400,
  missing_idempotency_key: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  busy: 409,
  conversation_conflict: 409,
  step_call_conflict: 409,
  duplicate_event: 409,
  event_refused: 409,
  // A decision on a parked ask the store refused (decided already, expired, another digest).
  ask_refused: 409,
  unavailable: 410,
  step_call_erased: 410,
  request_timeout: 408,
  // The tenant runs as many turns at once as the host allows it (`TurnLimit`): retryable.
  too_many_turns: 429,
  payload_too_large: 413,
  unsupported_media_type: 415,
  host_not_allowed: 421,
  // The tenant or the person is fenced by an operator (suspended, under erasure): not retryable.
  scope_fenced: 423,
  invalid_input: 422,
  invalid_id: 422,
  invalid_scope: 422,
  // The model's adapter cannot honor the request (refused by `validate`, before any I/O).
  provider_unsupported: 422,
  internal: 500,
  console_missing: 503,
  not_admitted: 503,
  shutting_down: 503,
  // A request on a connection opened over the connection cap (`ConnectionCap`): retryable.
  over_capacity: 503,
  store_unavailable: 503,
  // A routine run transition the store refused (not in the state it needs; spec: routine-runner).
  store_conflict: 409,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof STATUS_OF_CODE;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(STATUS_OF_CODE, code);
}

export function statusOf(code: ErrorCode): number {
  return STATUS_OF_CODE[code];
}

/** A failure the host reports as `{error: {code, message}}`; `retryable` is fixed at construction. */
export class HttpError extends AlmaError<ErrorCode> {
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    code: ErrorCode,
    message: string,
    options: { retryable?: boolean; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(code, message, options);
    this.headers = options.headers ?? {};
  }
}

export interface ErrorBody {
  readonly error: { readonly code: ErrorCode; readonly message: string };
}

/**
 * The code and message a client may see for any thrown value. A message names what was expected,
 * never what was sent: a snapshot rejection's own message carries the path through the client's
 * keys, so the client sees only the rule it broke.
 */
export function describe(error: unknown): {
  code: ErrorCode;
  message: string;
  headers: Readonly<Record<string, string>>;
} {
  if (error instanceof HttpError)
    return { code: error.code, message: error.message, headers: error.headers };
  if (error instanceof SnapshotError)
    return {
      code: "invalid_input",
      message: `the input must be plain JSON data within the host's limits (rule: ${error.rule})`,
      headers: {},
    };
  if (
    error instanceof AlmaError &&
    isErrorCode(error.code) &&
    (error.code as string) !== "internal"
  )
    return { code: error.code, message: error.message, headers: {} };
  return { code: "internal", message: "internal error", headers: {} };
}

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store",
      ...headers,
    },
  });
}

export function errorResponse(error: unknown): Response {
  const { code, message, headers } = describe(error);
  const body: ErrorBody = { error: { code, message } };
  return json(statusOf(code), body, { ...headers });
}
