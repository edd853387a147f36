import {
  SCOPE_FENCE_REASONS,
  type ScopeFenceReason,
  type ScopeFenceTarget,
} from "@alma-harness/core";
import { onlyFields, readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import type { RouteRequest } from "./router.js";

type On = (method: string, path: string, handler: (r: RouteRequest) => Promise<Response>) => void;

function knownOrg(host: HostContext, org: string | undefined): string {
  if (org === undefined || !host.desk.clinic(org))
    throw new HttpError("not_found", "no such tenant");
  return org;
}

function targetOf(host: HostContext, r: RouteRequest): ScopeFenceTarget {
  const org = knownOrg(host, r.params.org);
  return r.params.uid === undefined ? { org } : { org, uid: r.params.uid };
}

async function reasonOf(r: RouteRequest): Promise<ScopeFenceReason> {
  const body = await readJsonObject(r.request);
  onlyFields(body, ["reason"]);
  const reason = body.reason;
  if (typeof reason !== "string" || !(SCOPE_FENCE_REASONS as readonly string[]).includes(reason)) {
    throw new HttpError("invalid_input", `reason must be one of ${SCOPE_FENCE_REASONS.join(", ")}`);
  }
  return reason as ScopeFenceReason;
}

/**
 * The operator's scope fence (spec: scope-fence): `PUT …/fence` fences a whole tenant, or one person
 * under `…/people/:uid/fence`, with `{reason}` (`suspended`, `erasure`, `operator`); `DELETE` lifts
 * exactly that fence; `GET /v1/admin/tenants/:org/fences` lists the tenant's fences. Setting a fence
 * that is there keeps the first (200 with it); a new one is 201.
 */
export function fenceRoutes(on: On, host: HostContext): void {
  const put = async (r: RouteRequest) => {
    const target = targetOf(host, r);
    const reason = await reasonOf(r);
    const before = (await host.runtime.runner.scopeFences(target)).some(
      (f) => f.uid === target.uid,
    );
    const fence = await host.runtime.runner.fenceScope({ target, reason });
    return json(before ? 200 : 201, { fence });
  };
  const lift = async (r: RouteRequest) =>
    json(200, { lifted: await host.runtime.runner.liftScopeFence(targetOf(host, r)) });
  on("GET", "/v1/admin/tenants/:org/fences", async (r) =>
    json(200, {
      fences: await host.runtime.runner.scopeFences({ org: knownOrg(host, r.params.org) }),
    }),
  );
  on("PUT", "/v1/admin/tenants/:org/fence", put);
  on("DELETE", "/v1/admin/tenants/:org/fence", lift);
  on("PUT", "/v1/admin/tenants/:org/people/:uid/fence", put);
  on("DELETE", "/v1/admin/tenants/:org/people/:uid/fence", lift);
}
