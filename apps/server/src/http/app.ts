import { adminRoutes } from "./admin-routes.js";
import type { HostContext } from "./context.js";
import { describe, errorResponse, json } from "./errors.js";
import { Router } from "./router.js";
import { staticRoutes } from "./static.js";
import { tenantRoutes } from "./tenant-routes.js";

/** The host's HTTP core: a standard `Request` in, a standard `Response` out. */
export type Handle = (request: Request) => Promise<Response>;

export type AccessLog = (line: { readonly method: string; readonly path: string; readonly status: number; readonly ms: number }) => void;

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

/** Builds the router once; every failure becomes `{error: {code, message}}` with its status. */
export function createApp(host: HostContext, hooks: { readonly log?: AccessLog; readonly onError?: (error: unknown) => void } = {}): Handle {
  const router = new Router();
  router.on("GET", "/healthz", async () => json(200, { ok: true }));
  router.on("GET", "/v1/info", async () => json(200, info(host)));
  tenantRoutes(router, host);
  adminRoutes(router, host);
  staticRoutes(router, host.http.publicDir);
  return async (request) => {
    const started = performance.now();
    const url = new URL(request.url);
    let response: Response;
    try {
      const { handler, params } = router.match(request.method, url.pathname);
      response = await handler({ request, url, params });
    } catch (error) {
      if (describe(error).code === "internal") hooks.onError?.(error);
      response = errorResponse(error);
    }
    if (request.method === "HEAD") response = new Response(null, { status: response.status, headers: response.headers });
    hooks.log?.({ method: request.method, path: url.pathname, status: response.status, ms: Math.round(performance.now() - started) });
    return response;
  };
}
