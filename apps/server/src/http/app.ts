import { adminRoutes } from "./admin-routes.js";
import { type HostApp, hostApi, methodNotAllowed } from "./api.js";
import { healthRoute, infoRoute, openApiRoute } from "./openapi.js";
import type { HostContext } from "./context.js";
import { describe, errorResponse, HttpError, json } from "./errors.js";
import { type AllowedHosts, hostAllowed, withSecurityHeaders } from "./hardening.js";
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
const HEALTH_PATH = /^\/+healthz\/*$/;

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

/** Every route the host serves, declared for `/openapi.json`, then the 405s for the methods it does not. */
export function hostRoutes(host: HostContext): HostApp {
  const app = hostApi();
  app.openapi(healthRoute, () => json(200, { ok: true }));
  app.openapi(infoRoute, () => json(200, info(host)));
  tenantRoutes(app, host);
  callRoutes(app, host);
  uiRoutes(app, host);
  adminRoutes(app, host);
  staticRoutes(app, host.http.publicDir);
  openApiRoute(app);
  methodNotAllowed(app);
  return app;
}

/** A path segment that is not valid percent-encoding is the client's error (the router would keep it raw). */
function checkEncoding(pathname: string): void {
  try {
    decodeURIComponent(pathname);
  } catch {
    throw new HttpError("bad_request", "the path is not valid percent-encoding");
  }
}

/**
 * Builds the routes once; every failure becomes `{error: {code, message}}` with its status. A Host
 * name outside the allowed ones is refused before routing (421); a request on a connection over the
 * cap is answered `503 over_capacity` unless it is the health check; every answer carries the
 * standard security headers.
 */
export function createApp(host: HostContext, hooks: AppHooks = {}): Handle {
  const app = hostRoutes(host);
  return async (request, connection) => {
    const started = performance.now();
    const url = new URL(request.url);
    const meta = { route: "-" };
    let response: Response;
    try {
      if (hooks.allowedHosts && !hostAllowed(hooks.allowedHosts(), url.hostname)) {
        throw new HttpError(
          "host_not_allowed",
          "this host does not serve that Host name (see ALMA_ALLOWED_HOSTS)",
        );
      }
      checkEncoding(url.pathname);
      const health = HEALTH_PATH.test(url.pathname);
      if (connection?.healthOnly && !health)
        throw new HttpError("not_found", "the health listener serves only /healthz");
      if (connection?.overCapacity && !health) throw overCapacity();
      response = await app.fetch(request, {
        meta,
        ...(hooks.onError ? { onError: hooks.onError } : {}),
      });
    } catch (error) {
      if (describe(error).code === "internal") hooks.onError?.(error);
      response = errorResponse(error);
    }
    if (request.method === "HEAD")
      response = new Response(null, { status: response.status, headers: response.headers });
    response = withSecurityHeaders(response);
    hooks.log?.({
      method: request.method,
      route: meta.route,
      status: response.status,
      ms: Math.round(performance.now() - started),
    });
    return response;
  };
}
