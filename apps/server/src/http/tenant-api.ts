import { createRoute, z } from "@hono/zod-openapi";
import { validateId } from "@alma-harness/core";
import type { MiddlewareHandler } from "hono";
import { type HostEnv, jsonBody, tenantAuth } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError } from "./errors.js";
import { TURN_EVENTS, TurnView } from "./answers.js";
import { answers, body, Id, params, TENANT } from "./schemas.js";

/** The errors every tenant route may answer: a token (401), a tenant this host serves (403). */
const AUTH = [401, 403] as const;

/**
 * `Idempotency-Key` is read before the body, as the runner's own key: missing is 400, not an id is
 * 422 `invalid_id`; and a host that is shutting down refuses (503) before a byte of it is read.
 */
export function keyFirst(host: HostContext, what: string): MiddlewareHandler<HostEnv> {
  return async (c, next) => {
    const key = c.req.header("idempotency-key");
    if (key === undefined)
      throw new HttpError("missing_idempotency_key", `send ${what} in the Idempotency-Key header`);
    validateId("Idempotency-Key", key);
    host.shutdown.admit();
    await next();
  };
}

/** Refuses a new batch or message once shutdown has begun, before its body is read. */
export function admitting(host: HostContext): MiddlewareHandler<HostEnv> {
  return async (_c, next) => {
    host.shutdown.admit();
    await next();
  };
}

export const TurnInput = z
  .union([
    z.string().openapi({ description: "the person's text" }),
    z.looseObject({ role: z.literal("user"), blocks: z.array(z.looseObject({})) }),
  ])
  .openapi({ description: "text, or a user message (`{role: 'user', blocks}`)" });

const Prefer = z.string().optional().openapi({
  description:
    "`wait=N` (RFC 7240, seconds): how long to wait for the answer before 202; `respond-async`: not at all",
});
const Accept = z.string().optional().openapi({
  description: "`text/event-stream` streams the turn (SSE) instead of one JSON answer",
});

const RecordedEvent = z
  .discriminatedUnion("kind", [
    z.strictObject({
      id: Id,
      at: z.string(),
      kind: z.literal("message"),
      role: z.enum(["user", "assistant"]),
      origin: z.enum(["human", "system"]).optional(),
      blocks: z.array(z.strictObject({ type: z.literal("text"), text: z.string() })),
    }),
    z.strictObject({ id: Id, at: z.string(), kind: z.literal("undelivered"), turn: z.string() }),
  ])
  .openapi("RecordedEvent", {
    description:
      "a product-side fact: a message someone sent outside a turn, or a turn's answer that never reached the person",
  });

/** The tenant routes' declarations: parameters, query, headers and body, each checked and documented. */
export function tenantApi(host: HostContext) {
  return { ...turnApi(host), ...sessionApi(host) };
}

function turnApi(host: HostContext) {
  const auth = tenantAuth(host);
  return {
    postTurn: createRoute({
      method: "post",
      path: "/v1/sessions/{sessionId}/turns",
      summary: "Send a message: run a turn (idempotent by key)",
      security: TENANT,
      middleware: [auth, keyFirst(host, "the message's delivery id"), jsonBody(host)] as const,
      request: {
        params: params({ sessionId: Id }),
        headers: z.object({ "idempotency-key": Id, prefer: Prefer, accept: Accept }),
        body: body({ input: TurnInput }),
      },
      responses: answers(
        {
          200: "the settled view (also `reconciliation_required`); SSE with `Accept: text/event-stream`",
          202: "still running, or awaiting approval: read the turn at `Location` after `Retry-After`",
        },
        [...AUTH, 400, 408, 409, 410, 413, 415, 422, 423, 429, 503],
        { prefer: true, schema: TurnView, stream: TURN_EVENTS },
      ),
    }),
    getTurn: createRoute({
      method: "get",
      path: "/v1/turns/{rootKey}",
      summary: "Read a turn (never a new dispatch); long-poll with `Prefer: wait=N`",
      security: TENANT,
      middleware: [auth] as const,
      request: {
        params: params({ rootKey: Id }),
        headers: z.object({
          prefer: Prefer,
          accept: Accept,
          "last-event-id": z.string().optional().openapi({
            description: "with `Accept: text/event-stream`: read the stream on after this id",
          }),
        }),
      },
      responses: answers(
        { 200: "the settled view", 202: "still running, or awaiting approval" },
        [...AUTH, 404, 410, 422],
        { prefer: true, schema: TurnView, stream: TURN_EVENTS },
      ),
    }),
  };
}

function sessionApi(host: HostContext) {
  const auth = tenantAuth(host);
  return {
    postEvents: createRoute({
      method: "post",
      path: "/v1/sessions/{sessionId}/events",
      summary: "Record product-side facts (idempotent by event id)",
      security: TENANT,
      middleware: [auth, admitting(host), jsonBody(host)] as const,
      request: {
        params: params({ sessionId: Id }),
        body: body({ events: z.array(RecordedEvent).min(1) }),
      },
      responses: answers({ 200: "recorded" }, [...AUTH, 409, 410, 413, 415, 422, 423, 503]),
    }),
    deleteSession: createRoute({
      method: "delete",
      path: "/v1/sessions/{sessionId}",
      summary: "Erase a session",
      security: TENANT,
      middleware: [auth] as const,
      request: { params: params({ sessionId: Id }) },
      responses: answers({ 204: "erased" }, [...AUTH, 409, 422]),
    }),
    listSessions: createRoute({
      method: "get",
      path: "/v1/sessions",
      summary: "The token's own sessions, a page of 50",
      security: TENANT,
      middleware: [auth] as const,
      request: { query: z.object({ cursor: z.string().max(1_000).optional() }) },
      responses: answers({ 200: "`{items, nextCursor?}`" }, [...AUTH, 422]),
    }),
    getSession: createRoute({
      method: "get",
      path: "/v1/sessions/{sessionId}",
      summary: "A session's transcript (text only) and its turns",
      security: TENANT,
      middleware: [auth] as const,
      request: { params: params({ sessionId: Id }) },
      responses: answers({ 200: "the transcript" }, [...AUTH, 422]),
    }),
    me: createRoute({
      method: "get",
      path: "/v1/me",
      summary: "Who the token is",
      security: TENANT,
      middleware: [auth] as const,
      responses: answers({ 200: "`{org, uid, clinic, patient}`" }, AUTH),
    }),
  };
}
