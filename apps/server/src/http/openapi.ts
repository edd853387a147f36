import { createRoute } from "@hono/zod-openapi";
import type { HostApp } from "./api.js";
import { json } from "./errors.js";
import { answers } from "./schemas.js";

export const healthRoute = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Health: served first, also on a connection over the cap and on the health listener",
  responses: answers({ 200: "`{ok: true}`" }),
});

export const infoRoute = createRoute({
  method: "get",
  path: "/v1/info",
  summary: "The host's model, tiers, store, caps and tenant names",
  responses: answers({ 200: "the host's description" }),
});

const openApiDocRoute = createRoute({
  method: "get",
  path: "/openapi.json",
  summary: "This document (OpenAPI 3.1)",
  responses: answers({ 200: "the OpenAPI 3.1 document of every route the host serves" }),
});

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document built from the routes' own declarations, so it
 * cannot drift from what they check. Built once, at the first request, when every route is in.
 */
export function openApiRoute(app: HostApp): void {
  let document: unknown;
  app.openapi(openApiDocRoute, () => {
    document ??= app.getOpenAPI31Document({
      openapi: "3.1.0",
      info: {
        title: "Alma host",
        version: "0.1.0",
        description:
          "The clinic front-desk host: governed turns over HTTP and SSE, and the operator's routes. " +
          "Every error is `{error: {code, message}}`; a bad parameter, query or body is 422.",
      },
    });
    return json(200, document);
  });
}
