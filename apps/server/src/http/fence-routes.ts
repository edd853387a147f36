import {
  SCOPE_FENCE_REASONS,
  type ScopeFenceReason,
  type ScopeFenceTarget,
} from "@alma-harness/core";
import { z } from "@hono/zod-openapi";
import { operatorRoute } from "./admin-api.js";
import type { HostApp } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { answers, body, params, ScopePart } from "./schemas.js";

function knownOrg(host: HostContext, org: string): string {
  if (!host.desk.clinic(org)) throw new HttpError("not_found", "no such tenant");
  return org;
}

function targetOf(host: HostContext, p: { org: string; uid?: string }): ScopeFenceTarget {
  const org = knownOrg(host, p.org);
  return p.uid === undefined ? { org } : { org, uid: p.uid };
}

const Reason = body({
  reason: z.enum(SCOPE_FENCE_REASONS as unknown as [ScopeFenceReason]).openapi({
    description: "why: `suspended`, `erasure` or `operator`",
  }),
});

function fenceApi(host: HostContext) {
  const tenant = { org: ScopePart };
  const person = { org: ScopePart, uid: ScopePart };
  const put = (path: string, who: typeof tenant | typeof person) =>
    operatorRoute(host, {
      method: "put",
      path,
      summary: "Fence (the tenant, or one person in it): turns, asks and event batches refused 423",
      request: { params: params(who), body: Reason },
      responses: answers(
        { 200: "the fence that was there", 201: "`{fence}`" },
        [401, 404, 413, 415, 422],
      ),
    });
  const lift = (path: string, who: typeof tenant | typeof person) =>
    operatorRoute(host, {
      method: "delete",
      path,
      summary: "Lift exactly that fence",
      request: { params: params(who) },
      responses: answers({ 200: "`{lifted}`" }, [401, 404, 422]),
    });
  return {
    list: operatorRoute(host, {
      method: "get",
      path: "/v1/admin/tenants/{org}/fences",
      summary: "The tenant's fences",
      request: { params: params(tenant) },
      responses: answers({ 200: "`{fences}`" }, [401, 404, 422]),
    }),
    putTenant: put("/v1/admin/tenants/{org}/fence", tenant),
    liftTenant: lift("/v1/admin/tenants/{org}/fence", tenant),
    putPerson: put("/v1/admin/tenants/{org}/people/{uid}/fence", person),
    liftPerson: lift("/v1/admin/tenants/{org}/people/{uid}/fence", person),
  };
}

/**
 * The operator's scope fence (spec: scope-fence): `PUT …/fence` fences a whole tenant, or one person
 * under `…/people/:uid/fence`, with `{reason}` (`suspended`, `erasure`, `operator`); `DELETE` lifts
 * exactly that fence; `GET /v1/admin/tenants/:org/fences` lists the tenant's fences. Setting a fence
 * that is there keeps the first (200 with it); a new one is 201.
 */
export function fenceRoutes(app: HostApp, host: HostContext): void {
  const r = fenceApi(host);
  const put = async (p: { org: string; uid?: string }, reason: ScopeFenceReason) => {
    const target = targetOf(host, p);
    const before = (await host.runtime.runner.scopeFences(target)).some(
      (f) => f.uid === target.uid,
    );
    const fence = await host.runtime.runner.fenceScope({ target, reason });
    return json(before ? 200 : 201, { fence });
  };
  const lift = async (p: { org: string; uid?: string }) =>
    json(200, { lifted: await host.runtime.runner.liftScopeFence(targetOf(host, p)) });
  app.openapi(r.list, async (c) =>
    json(200, {
      fences: await host.runtime.runner.scopeFences({
        org: knownOrg(host, c.req.valid("param").org),
      }),
    }),
  );
  app.openapi(r.putTenant, (c) => put(c.req.valid("param"), c.req.valid("json").reason));
  app.openapi(r.liftTenant, (c) => lift(c.req.valid("param")));
  app.openapi(r.putPerson, (c) => put(c.req.valid("param"), c.req.valid("json").reason));
  app.openapi(r.liftPerson, (c) => lift(c.req.valid("param")));
}
