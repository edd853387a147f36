import type {
  Routine,
  RoutineInput,
  RoutineRun,
  RoutineResolveAction,
  RoutineRunState,
} from "@alma-harness/core";
import type { TickReport } from "@alma-harness/schedule";
import { routineScope, STAFF_INBOX } from "../routines/nightly.js";
import type { HostApp } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { routineApi } from "./routine-api.js";

const MAX_RUNS = 200;

function knownOrg(host: HostContext, org: string): string {
  if (!host.desk.clinic(org)) throw new HttpError("not_found", "no such tenant");
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

async function runsOf(
  host: HostContext,
  { org, routineId, state }: { org?: string; routineId?: string; state?: RoutineRunState },
): Promise<unknown[]> {
  const orgs = org === undefined ? host.desk.clinics().map((c) => c.org) : [knownOrg(host, org)];
  const out: unknown[] = [];
  for (const o of orgs) {
    const page = await host.routines.scheduler.stores.routineRuns.list(routineScope(o), {
      limit: 100,
      ...(routineId ? { routineId } : {}),
      ...(state ? { state } : {}),
    });
    out.push(...page.items.map(runBody));
  }
  return out
    .sort((a, b) => (b as { slot: number }).slot - (a as { slot: number }).slot)
    .slice(0, MAX_RUNS);
}

/** A routine from an operator's body: the host fixes the scope (the clinic's back office) and the destination it serves. */
async function putRoutine(
  host: HostContext,
  p: { org: string; id: string },
  sent: Record<string, unknown>,
): Promise<Response> {
  const scope = routineScope(knownOrg(host, p.org));
  const existing = await host.routines.scheduler.stores.routines.get(scope, p.id);
  const routine = await host.routines.scheduler.saveRoutine({
    ...sent,
    scope,
    id: p.id,
    destination: STAFF_INBOX,
    createdAt: host.clock.now(),
  } as unknown as RoutineInput);
  return json(existing ? 200 : 201, { routine: routineBody(routine) });
}

async function resolveRun(
  host: HostContext,
  p: { org: string; id: string; slot: string },
  action: RoutineResolveAction,
): Promise<Response> {
  const org = knownOrg(host, p.org);
  const run = await host.routines.scheduler.resolve(
    routineScope(org),
    p.id,
    Number(p.slot),
    action,
  );
  return json(200, { run: runBody(run) });
}

/**
 * The operator's routines (spec: routine-runner): list the routines and their runs, save one for a
 * clinic (its scope is the clinic's back office and its destination the staff inbox, fixed by the
 * host), delete one, resolve a `reconciliation_required` or `failed` run (`abandon`,
 * `confirm_completed`, `rerun`), tick now, and read the staff inbox the results went to.
 */
export function routineRoutes(app: HostApp, host: HostContext): void {
  const r = routineApi(host);
  app.openapi(r.list, async () =>
    json(200, { routines: await allRoutines(host), lastTick: tickBody(host.routines.lastTick()) }),
  );
  app.openapi(r.runs, async (c) => json(200, { runs: await runsOf(host, c.req.valid("query")) }));
  app.openapi(r.inbox, (c) => {
    const { org } = c.req.valid("query");
    return json(200, {
      messages: host.routines.inbox.messages(org === undefined ? undefined : knownOrg(host, org)),
    });
  });
  app.openapi(r.tick, async () => json(200, { tick: tickBody(await host.routines.tick()) }));
  app.openapi(r.put, (c) => putRoutine(host, c.req.valid("param"), c.req.valid("json")));
  app.openapi(r.remove, async (c) => {
    const p = c.req.valid("param");
    const removed = await host.routines.scheduler.stores.routines.remove(
      routineScope(knownOrg(host, p.org)),
      p.id,
    );
    return json(200, { removed });
  });
  app.openapi(r.resolve, (c) => resolveRun(host, c.req.valid("param"), c.req.valid("json").action));
}
