import { z } from "@hono/zod-openapi";
import { STATUS_OF_CODE } from "./errors.js";

/**
 * The pieces every route declaration shares: identifiers as the runtime checks them, the error
 * body, and the answers a route documents by reference. One declaration per route validates,
 * types its handler and describes it in `/openapi.json`.
 */

/** Ids (sessions, keys, asks, facts, routines): 1-200 printable ASCII characters, no spaces (`validateId`). */
export const Id = z
  .string()
  .regex(/^[\x21-\x7e]{1,200}$/, "must be 1-200 printable ASCII characters without spaces");

/** A tenant or a person (`normalizeScope`): 1-64 characters of `[A-Za-z0-9_.-]`, not starting with a dot. */
export const ScopePart = z
  .string()
  .regex(
    /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/,
    'must be 1-64 characters of [A-Za-z0-9_.-], not starting with "."',
  );

/** A path's parameters, each declared once: `params({ sessionId: Id })`. */
export function params<T extends z.ZodRawShape>(shape: T) {
  return z.object(shape);
}

/**
 * A JSON body that takes exactly `shape`'s fields. A field it does not take is refused naming what
 * the route takes, never the field that was sent.
 */
export function body<T extends z.ZodRawShape>(shape: T) {
  const names = Object.keys(shape).join(", ");
  const schema = z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys" ? `this route takes only ${names}` : undefined,
  });
  return { required: true, content: { "application/json": { schema } } } as const;
}

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(STATUS_OF_CODE) as [keyof typeof STATUS_OF_CODE]),
      message: z.string(),
    }),
  })
  .openapi("Error");

/** Any JSON object: an answer whose fields the route's description and the README name. */
export const JsonObject = z.looseObject({}).openapi("JsonObject");

const ERROR_REF = { $ref: "#/components/responses/Error" } as const;

const header = (description: string) => ({ description, schema: { type: "string" as const } });

/** What a 202 carries: where the work is read, when to ask. */
const ACCEPTED_HEADERS = {
  Location: header("where the turn (or call) is read: `GET` it, with `Prefer: wait=N` to wait"),
  "Retry-After": header(
    "seconds before asking again (2 while running, 10 while it awaits a person)",
  ),
};

/** What a route honouring `Prefer` reports (RFC 7240). */
const PREFER_HEADERS = {
  "Preference-Applied": header(
    "the `wait=N` that bounded the answer (clamped), or `respond-async`",
  ),
};

/**
 * What the host answers with `status`, and the errors it documents (each the shared `Error`
 * response). A 202 documents its `Location` and `Retry-After`; `prefer`: the route honours
 * `Prefer` and reports it.
 */
export function answers(
  ok: Readonly<Record<number, string>>,
  errors: readonly number[] = [],
  opts: { readonly schema?: z.ZodType; readonly prefer?: boolean; readonly stream?: string } = {},
) {
  const out: Record<string, unknown> = {};
  for (const [status, description] of Object.entries(ok)) {
    const headers = {
      ...(status === "202" ? ACCEPTED_HEADERS : {}),
      ...(opts.prefer ? PREFER_HEADERS : {}),
    };
    const json = { "application/json": { schema: opts.schema ?? JsonObject } };
    // The same route streams its answer as SSE when the client accepts `text/event-stream`.
    const sse = status === "200" && opts.stream ? eventStream(opts.stream) : {};
    out[status] = {
      description,
      ...(status === "204" ? {} : { content: { ...json, ...sse } }),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
    };
  }
  return { ...out, ...errorAnswers(errors) } as Record<
    string,
    { description: string } | typeof ERROR_REF
  >;
}

/** Each status in `errors` as the shared `Error` response. */
export function errorAnswers(errors: readonly number[]): Record<string, typeof ERROR_REF> {
  return Object.fromEntries(errors.map((status) => [String(status), ERROR_REF]));
}

/** An SSE answer: `description` says which events it carries. */
export function eventStream(description: string) {
  return { "text/event-stream": { schema: z.string().openapi({ description }) } };
}

export const TENANT = [{ tenant: [] }];
export const OPERATOR = [{ operator: [] }];
