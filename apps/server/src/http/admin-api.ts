import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { adminAuth, type HostEnv, jsonBody } from "./api.js";
import type { HostContext } from "./context.js";
import { answers, body, Id, OPERATOR, params, ScopePart } from "./schemas.js";

/** An operator route: the operator token first (401), then its body if it takes one, then its declaration. */
export function operatorRoute<const R extends Omit<RouteConfig, "middleware" | "security">>(
  host: HostContext,
  route: R,
) {
  const middleware: MiddlewareHandler<HostEnv>[] = [adminAuth(host)];
  if (route.request?.body) middleware.push(jsonBody(host));
  return createRoute({ ...route, security: OPERATOR, middleware });
}

/** `?org=`: one tenant's rows only. */
export const OrgFilter = z.object({
  org: ScopePart.optional().openapi({ description: "one tenant's only" }),
});

const Tenant = params({ org: ScopePart });
const Person = params({ org: ScopePart, uid: ScopePart });
const Session = params({ org: ScopePart, uid: ScopePart, sessionId: Id });

/** The operator routes of `admin-routes.ts`, each declared once. */
export function adminApi(host: HostContext) {
  return { ...peopleApi(host), ...deskApi(host) };
}

/** The tenants, their people, sessions, turns and trails. */
function peopleApi(host: HostContext) {
  const op = <const R extends Omit<RouteConfig, "middleware" | "security">>(route: R) =>
    operatorRoute(host, route);
  return {
    tenants: op({
      method: "get",
      path: "/v1/admin/tenants",
      summary: "The tenants and the people the host knows",
      responses: answers({ 200: "`{tenants: [{org, name, people}]}`" }, [401]),
    }),
    sessions: op({
      method: "get",
      path: "/v1/admin/tenants/{org}/sessions",
      summary: "A tenant's sessions, newest first",
      request: { params: Tenant },
      responses: answers({ 200: "`{org, sessions}`" }, [401, 404, 422]),
    }),
    transcript: op({
      method: "get",
      path: "/v1/admin/tenants/{org}/sessions/{uid}/{sessionId}",
      summary: "A session's transcript and turns",
      request: { params: Session },
      responses: answers({ 200: "the transcript" }, [401, 404, 422]),
    }),
    sessionTrails: op({
      method: "get",
      path: "/v1/admin/tenants/{org}/sessions/{uid}/{sessionId}/trails",
      summary: "A session's trails, by its real id",
      request: { params: Session },
      responses: answers({ 200: "`{org, uid, sessionId, events}`" }, [401, 404, 422]),
    }),
    erasePerson: op({
      method: "delete",
      path: "/v1/admin/tenants/{org}/people/{uid}",
      summary: "Erase everything of one person at a clinic, in every store",
      request: { params: Person },
      responses: answers({ 200: "`{org, uid, erased, fencedAdmissions}`" }, [401, 404, 422]),
    }),
    turnTrails: op({
      method: "get",
      path: "/v1/admin/turns/{rootKey}",
      summary: "A turn's trails, outcome, uncertain cause and real session id",
      request: {
        params: params({ rootKey: Id }),
        query: OrgFilter.extend({
          uid: ScopePart.optional().openapi({ description: "one person's only" }),
        }),
      },
      responses: answers({ 200: "the turn's trails" }, [401, 404, 422]),
    }),
    outbox: op({
      method: "get",
      path: "/v1/admin/tenants/{org}/outbox",
      summary: "What `send_message` delivered",
      request: { params: Tenant },
      responses: answers({ 200: "`{messages}`" }, [401, 404, 422]),
    }),
  };
}

/** The operator's desk: turns, spend, uncertain turns, late usage, asks and tokens. */
function deskApi(host: HostContext) {
  const op = <const R extends Omit<RouteConfig, "middleware" | "security">>(route: R) =>
    operatorRoute(host, route);
  return {
    spend: op({
      method: "get",
      path: "/v1/admin/spend",
      summary: "Spend per clinic and day against the caps",
      request: {
        query: z.object({
          days: z.coerce.number().int().min(1).max(60).default(14).openapi({
            description: "how many days back, today included (1-60, default 14)",
          }),
        }),
      },
      responses: answers({ 200: "`{from, to, caps, tenants}`" }, [401, 422]),
    }),
    uncertain: op({
      method: "get",
      path: "/v1/admin/uncertain",
      summary: "The uncertain turns the runner reported",
      request: { query: OrgFilter },
      responses: answers({ 200: "`{turns}`" }, [401, 422]),
    }),
    lateUsage: op({
      method: "get",
      path: "/v1/admin/late-usage",
      summary: "Late authoritative usage of cut calls (evidence, never a bill)",
      request: { query: OrgFilter },
      responses: answers({ 200: "`{available, observations, truncated}`" }, [401, 404, 422]),
    }),
    asks: op({
      method: "get",
      path: "/v1/admin/asks",
      summary: "Pending permission asks, from the store",
      request: { query: OrgFilter },
      responses: answers({ 200: "`{asks}`" }, [401, 422]),
    }),
    approve: op({
      method: "post",
      path: "/v1/admin/asks/{askId}/approve",
      summary: "Approve a pending ask (first decision wins)",
      request: { params: params({ askId: Id }) },
      responses: answers({ 200: "`{askId, state}`" }, [401, 404, 409, 422]),
    }),
    deny: op({
      method: "post",
      path: "/v1/admin/asks/{askId}/deny",
      summary: "Deny a pending ask (first decision wins)",
      request: { params: params({ askId: Id }) },
      responses: answers({ 200: "`{askId, state}`" }, [401, 404, 409, 422]),
    }),
    tokens: op({
      method: "post",
      path: "/v1/admin/tokens",
      summary: "Mint a tenant token",
      request: {
        body: body({
          org: ScopePart,
          uid: ScopePart,
          ttlSeconds: z
            .number()
            .int()
            .min(60)
            .max(7 * 86_400)
            .optional()
            .openapi({ description: "seconds, 60-604800 (default 8 hours)" }),
        }),
      },
      responses: answers({ 201: "`{org, uid, token, expiresAt}`" }, [401, 404, 413, 415, 422]),
    }),
  };
}
