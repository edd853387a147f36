import { OpenAPIHono } from "@hono/zod-openapi";
import type { Scope } from "@alma-harness/core";
import type { MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ZodError } from "zod";
import { verifyAdmin, verifyTenant } from "./auth.js";
import { readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { describe, errorResponse, HttpError } from "./errors.js";
import { ErrorBody } from "./schemas.js";

/**
 * What one request carries through the routes: `meta.route` is set to the matched route's pattern
 * (for the access log, never the path itself), `onError` hears of a failure the host did not mean.
 */
export interface HostBindings {
  readonly meta: { route: string };
  readonly onError?: (error: unknown) => void;
}

export interface HostEnv {
  Bindings: HostBindings;
  Variables: { scope: Scope };
}

export type HostApp = OpenAPIHono<HostEnv>;

/** Where the failed part was (`body.input`), then the rule it broke; never the value that was sent. */
function validationError(target: string, error: ZodError): HttpError {
  const issue = error.issues[0];
  const where = [target === "json" ? "body" : target, ...(issue?.path ?? []).map(String)];
  const rule = issue?.message ?? "is not valid";
  const message = issue?.code === "unrecognized_keys" ? rule : `${where.join(".")}: ${rule}`;
  // A bad path segment names a resource that cannot exist; any other part is the request's input.
  return new HttpError(target === "param" ? "invalid_id" : "invalid_input", message.slice(0, 300));
}

/** Hono's own refusals (a body of another media type, JSON it cannot parse) in the host's codes. */
function fromHono(error: unknown): unknown {
  if (!(error instanceof HTTPException)) return error;
  if (error.status === 415)
    return new HttpError("unsupported_media_type", "send the body as application/json");
  if (error.status === 400) return new HttpError("malformed_json", "the body is not valid JSON");
  return new HttpError("bad_request", "the request is not valid");
}

/**
 * The host's routes on Hono: a validation failure is a 422 in the host's error shape, any thrown
 * value becomes `{error: {code, message}}` with its status, an unknown path a 404.
 */
export function hostApi(): HostApp {
  const app = new OpenAPIHono<HostEnv>({
    strict: false,
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.target, result.error);
    },
  });
  app.openAPIRegistry.register("Error", ErrorBody);
  app.openAPIRegistry.registerComponent("responses", "Error", {
    description: "`{error: {code, message}}`: the code's status is in `src/http/errors.ts`",
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "tenant", {
    type: "http",
    scheme: "bearer",
    bearerFormat: "JWT",
    description: "A tenant token (HS256; `org`, `uid`): `npx alma token --org … --uid …`",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "operator", {
    type: "http",
    scheme: "bearer",
    description: "The operator token (`ALMA_ADMIN_TOKEN`, or the one generated into `ALMA_HOME`)",
  });
  app.use("*", async (c, next) => {
    await next();
    const route = c.req.routePath;
    c.env.meta.route = route === "*" || route === "/*" ? "-" : route;
  });
  app.onError((error, c) => {
    const mapped = fromHono(error);
    if (describe(mapped).code === "internal") c.env.onError?.(error);
    return errorResponse(mapped);
  });
  app.notFound(() => errorResponse(new HttpError("not_found", "no such route")));
  return app;
}

/**
 * Every path the app serves answers 405 with `Allow` for the methods it does not: registered
 * after the routes, so it only ever sees what none of them took.
 */
export function methodNotAllowed(app: HostApp): void {
  const allowed = new Map<string, Set<string>>();
  for (const route of app.routes) {
    if (route.method === "ALL" || route.path === "/*" || route.path === "*") continue;
    const methods = allowed.get(route.path) ?? new Set<string>();
    methods.add(route.method);
    allowed.set(route.path, methods);
  }
  for (const [path, methods] of allowed) {
    const allow = [...methods].join(", ");
    app.all(path, () => {
      throw new HttpError("method_not_allowed", `use ${allow} on this path`, {
        headers: { allow },
      });
    });
  }
}

/** A tenant route's scope, from its verified token (set by `tenantAuth`). */
export function scopeOf(c: { get(key: "scope"): Scope }): Scope {
  return c.get("scope");
}

/**
 * Every tenant route derives the scope from the verified token first (401 before anything else),
 * refuses tenants the host does not serve (403), and only then reads the body.
 */
export function tenantAuth(host: HostContext): MiddlewareHandler<HostEnv> {
  return async (c, next) => {
    const scope = await verifyTenant(c.req.raw, host.secrets.jwtSecret, () => host.clock.now());
    if (!host.desk.clinic(scope.org))
      throw new HttpError("forbidden", "this host does not serve this token's tenant");
    host.directory.saw(scope);
    c.set("scope", scope);
    await next();
  };
}

/** Operator routes: the admin token is checked first (401), never a tenant token. */
export function adminAuth(host: HostContext): MiddlewareHandler<HostEnv> {
  return async (c, next) => {
    verifyAdmin(c.req.raw, host.secrets.adminToken);
    await next();
  };
}

/**
 * Reads the JSON body under the host's rules (`readJsonObject`: 415, 413 counted while streaming,
 * 400, 422 for a non-object) and hands it to the route's declared schema, which checks the rest.
 */
export function jsonBody(host: HostContext): MiddlewareHandler<HostEnv> {
  return async (c, next) => {
    const parsed = await readJsonObject(c.req.raw, host.http.bodyLimit);
    (c.req.bodyCache as Record<string, Promise<unknown>>).json = Promise.resolve(parsed);
    await next();
  };
}
