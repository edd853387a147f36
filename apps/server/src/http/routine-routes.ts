import {
  type Routine,
  type RoutineInput,
  type RoutineRun,
  ROUTINE_RESOLVE_ACTIONS,
  ROUTINE_RUN_STATES,
  type RoutineResolveAction,
  type RoutineRunState,
  validateId,
} from "@alma-harness/core";
import type { TickReport } from "@alma-harness/schedule";
import { routineScope, STAFF_INBOX } from "../routines/nightly.js";
import { onlyFields, readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import type { RouteRequest } from "./router.js";

type On = (method: string, path: string, handler: (r: RouteRequest) => Promise<Response>) => void;

const MAX_RUNS = 200;

function knownOrg(host: HostContext, org: string | undefined): string {
  if (org === undefined || !host.desk.clinic(org))
    throw new HttpError("not_found", "no such tenant");
  return org;
}

/** A routine as the console shows it: its data, minus nothing (a routine holds no secret), plus its org. */
const routineBody = ({ scope, ...r }: Routine) => ({ org: scope.org, uid: scope.uid, ...r });
const runBody = ({ scope, ...r }: RoutineRun) => ({
  org: scope.org,
  uid: scope.uid,
  ...r,
  slotAt: new Date(r.slot).toISOString(),
});

function tickBody(report: TickReport | null): unknown {
  if (!report) return null;
  return {
    at: report.at,
    ran: report.ran.length,
    missed: report.missed.length,
    submitted: report.submitted.length,
    interrupted: report.interrupted.length,
    skipped: report.skipped,
    errors: report.errors,
  };
}

async function allRoutines(host: HostContext): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.routines.scheduler.stores.routines.scan({
      limit: 100,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items.map(routineBody));
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

async function runsOf(host: HostContext, r: RouteRequest): Promise<unknown[]> {
  const q = r.url.searchParams;
  const org = q.get("org") ?? undefined;
  const routineId = q.get("routineId") ?? undefined;
  const state = q.get("state") ?? undefined;
  if (state !== undefined && !(ROUTINE_RUN_STATES as readonly string[]).includes(state))
    throw new HttpError("invalid_input", `state must be one of ${ROUTINE_RUN_STATES.join(", ")}`);
  const orgs = org === undefined ? host.desk.clinics().map((c) => c.org) : [knownOrg(host, org)];
  const out: unknown[] = [];
  for (const o of orgs) {
    const page = await host.routines.scheduler.stores.routineRuns.list(routineScope(o), {
      limit: 100,
      ...(routineId ? { routineId: validateId("routineId", routineId) } : {}),
      ...(state ? { state: state as RoutineRunState } : {}),
    });
    out.push(...page.items.map(runBody));
  }
  return out
    .sort((a, b) => (b as { slot: number }).slot - (a as { slot: number }).slot)
    .slice(0, MAX_RUNS);
}

/** A routine from an operator's body: the host fixes the scope (the clinic's back office) and the destination it serves. */
async function putRoutine(host: HostContext, r: RouteRequest): Promise<Response> {
  const org = knownOrg(host, r.params.org);
  const id = validateId("routineId", r.params.id);
  const body = await readJsonObject(r.request, host.http.bodyLimit);
  onlyFields(body, [
    "goal",
    "intent",
    "schedule",
    "profile",
    "cap",
    "catchUp",
    "execution",
    "enabled",
  ]);
  const scope = routineScope(org);
  const existing = await host.routines.scheduler.stores.routines.get(scope, id);
  const routine = await host.routines.scheduler.saveRoutine({
    ...body,
    scope,
    id,
    destination: STAFF_INBOX,
    createdAt: host.clock.now(),
  } as unknown as RoutineInput);
  return json(existing ? 200 : 201, { routine: routineBody(routine) });
}

async function resolveRun(host: HostContext, r: RouteRequest): Promise<Response> {
  const org = knownOrg(host, r.params.org);
  const id = validateId("routineId", r.params.id);
  const slot = Number(r.params.slot);
  if (!Number.isSafeInteger(slot) || slot < 0)
    throw new HttpError("invalid_input", "slot must be the run's epoch milliseconds");
  const body = await readJsonObject(r.request, host.http.bodyLimit);
  onlyFields(body, ["action"]);
  if (
    typeof body.action !== "string" ||
    !(ROUTINE_RESOLVE_ACTIONS as readonly string[]).includes(body.action)
  ) {
    throw new HttpError(
      "invalid_input",
      `action must be one of ${ROUTINE_RESOLVE_ACTIONS.join(", ")}`,
    );
  }
  const run = await host.routines.scheduler.resolve(
    routineScope(org),
    id,
    slot,
    body.action as RoutineResolveAction,
  );
  return json(200, { run: runBody(run) });
}

/**
 * The operator's routines (spec: routine-runner): list the routines and their runs, save one for a
 * clinic (its scope is the clinic's back office and its destination the staff inbox, fixed by the
 * host), delete one, resolve a `reconciliation_required` or `failed` run (`abandon`,
 * `confirm_completed`, `rerun`), tick now, and read the staff inbox the results went to.
 */
export function routineRoutes(on: On, host: HostContext): void {
  on("GET", "/v1/admin/routines", async () =>
    json(200, { routines: await allRoutines(host), lastTick: tickBody(host.routines.lastTick()) }),
  );
  on("GET", "/v1/admin/routines/runs", async (r) => json(200, { runs: await runsOf(host, r) }));
  on("GET", "/v1/admin/routines/inbox", async (r) => {
    const org = r.url.searchParams.get("org") ?? undefined;
    return json(200, {
      messages: host.routines.inbox.messages(org === undefined ? undefined : knownOrg(host, org)),
    });
  });
  on("POST", "/v1/admin/routines/tick", async () =>
    json(200, { tick: tickBody(await host.routines.tick()) }),
  );
  on("PUT", "/v1/admin/routines/:org/:id", (r) => putRoutine(host, r));
  on("DELETE", "/v1/admin/routines/:org/:id", async (r) => {
    const removed = await host.routines.scheduler.stores.routines.remove(
      routineScope(knownOrg(host, r.params.org)),
      validateId("routineId", r.params.id),
    );
    return json(200, { removed });
  });
  on("POST", "/v1/admin/routines/:org/:id/runs/:slot/resolve", (r) => resolveRun(host, r));
}
