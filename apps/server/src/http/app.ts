import { adminRoutes } from "./admin-routes.js";
import type { HostContext } from "./context.js";
import { describe, errorResponse, HttpError, json } from "./errors.js";
import { type AllowedHosts, hostAllowed, withSecurityHeaders } from "./hardening.js";
import { Router } from "./router.js";
import { staticRoutes } from "./static.js";
import { callRoutes } from "./call-routes.js";
import { type ConnectionInfo, overCapacity } from "./connections.js";
import { tenantRoutes } from "./tenant-routes.js";
import { uiRoutes } from "./ui-routes.js";

/**
 * The host's HTTP core: a standard `Request` in, a standard `Response` out. `connection` is what
 * the Node adapter knows of the connection (absent: an ordinary one).
 */
export type Handle = (request: Request, connection?: ConnectionInfo) => Promise<Response>;

/** The one route served on a connection over the cap: a health check must not read a busy host as a dead one. */
const HEALTH_ROUTE = "/healthz";

/**
 * One access-log line. `route` is the matched route's pattern (`/v1/sessions/:sessionId/turns`), or
 * `-` when none matched: never the path itself, which carries session ids and keys a client chose.
 */
export type AccessLog = (line: {
  readonly method: string;
  readonly route: string;
  readonly status: number;
  readonly ms: number;
}) => void;

export interface AppHooks {
  readonly log?: AccessLog;
  readonly onError?: (error: unknown) => void;
  /** The Host names served (read at each request, so `listen` can fill the default); absent: any. */
  readonly allowedHosts?: () => AllowedHosts;
}

function info(host: HostContext): unknown {
  return {
    name: "Alma clinic front desk",
    offlineDemo: host.models.offlineDemo,
    model: host.models.label,
    provider: host.models.provider,
    tiers: host.models.tiers,
    intent: host.intent,
    store: { kind: host.store.kind, durable: host.store.durable },
    caps: host.caps,
    // Names of tenants only: who their patients are is for the operator routes.
    tenants: host.desk.clinics().map((c) => ({ org: c.org, name: c.name })),
  };
}

/**
 * Builds the router once; every failure becomes `{error: {code, message}}` with its status. A Host
 * name outside the allowed ones is refused before routing (421); a request on a connection over the
 * cap is answered `503 over_capacity` unless it is the health check; every answer carries the
 * standard security headers.
 */
export function createApp(host: HostContext, hooks: AppHooks = {}): Handle {
  const router = new Router();
  router.on("GET", HEALTH_ROUTE, async () => json(200, { ok: true }));
  router.on("GET", "/v1/info", async () => json(200, info(host)));
  tenantRoutes(router, host);
  callRoutes(router, host);
  uiRoutes(router, host);
  adminRoutes(router, host);
  staticRoutes(router, host.http.publicDir);
  return async (request, connection) => {
    const started = performance.now();
    const url = new URL(request.url);
    let response: Response;
    let route = "-";
    try {
      if (hooks.allowedHosts && !hostAllowed(hooks.allowedHosts(), url.hostname)) {
        throw new HttpError(
          "host_not_allowed",
          "this host does not serve that Host name (see ALMA_ALLOWED_HOSTS)",
        );
      }
      const matched = router.match(request.method, url.pathname);
      route = matched.route;
      if (connection?.healthOnly && route !== HEALTH_ROUTE)
        throw new HttpError("not_found", "the health listener serves only /healthz");
      if (connection?.overCapacity && route !== HEALTH_ROUTE) throw overCapacity();
      response = await matched.handler({ request, url, params: matched.params });
    } catch (error) {
      if (describe(error).code === "internal") hooks.onError?.(error);
      response = errorResponse(error);
    }
    if (request.method === "HEAD")
      response = new Response(null, { status: response.status, headers: response.headers });
    response = withSecurityHeaders(response);
    hooks.log?.({
      method: request.method,
      route,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
    return response;
  };
}
