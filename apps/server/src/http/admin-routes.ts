import {
  type AuditRecord,
  microsToUsd,
  normalizeScope,
  type Scope,
  usdToMicros,
  utcDay,
  validateId,
} from "@alma-harness/core";
import { mintToken, verifyAdmin } from "./auth.js";
import { onlyFields, readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { fenceRoutes } from "./fence-routes.js";
import { memoryRoutes } from "./memory-routes.js";
import { routineRoutes } from "./routine-routes.js";
import type { RouteRequest, Router } from "./router.js";
import { transcriptOf, turnsOf } from "./transcript.js";
import { viewResponse } from "./views.js";

const DAY_MS = 86_400_000;
const MAX_TRAIL_EVENTS = 2_000;

function clinicOf(host: HostContext, org: string): string {
  if (!host.desk.clinic(org)) throw new HttpError("not_found", "no such tenant");
  return org;
}

async function sessionsOf(host: HostContext, org: string) {
  const rows: { uid: string; sessionId: string; revision: number; updatedAt: number }[] = [];
  for (const scope of host.directory.scopes(org)) {
    const page = await host.runtime.stores.sessions.list(scope, { limit: 100 });
    for (const s of page.items) rows.push({ uid: scope.uid, ...s });
  }
  return rows.sort((a, b) => b.updatedAt - a.updatedAt);
}

/**
 * A scope's trail records of one turn or one session, through the runner's `trails`: a session is
 * asked by its real id, which the runner translates to the pseudonym the trails store.
 */
async function trailOf(
  host: HostContext,
  scope: Scope,
  filter: { readonly turnId: string } | { readonly sessionId: string },
): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await host.runtime.runner.trails(scope, {
      ...filter,
      limit: 500,
      ...(cursor ? { cursor } : {}),
    });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && out.length < MAX_TRAIL_EVENTS);
  return out;
}

/** A turn's trails: the scope is found through the directory, since a root key hides its tenant. */
async function getTurnTrails(host: HostContext, route: RouteRequest): Promise<Response> {
  const rootKey = validateId("rootKey", route.params.rootKey);
  const org = route.url.searchParams.get("org") ?? undefined;
  const uid = route.url.searchParams.get("uid") ?? undefined;
  const scopes = host.directory.scopes(org).filter((s) => uid === undefined || s.uid === uid);
  for (const scope of scopes) {
    const events = await trailOf(host, scope, { turnId: rootKey });
    if (events.length === 0) continue;
    const view = await host.runtime.runner.read(scope, rootKey);
    const outcome = view ? safeView(view) : null;
    const uncertain =
      host.directory.uncertainTurns(scope.org).find((u) => u.rootKey === rootKey) ?? null;
    // The trails hold the session's pseudonym only; the real id comes from the turn's own root record.
    const root = await host.runtime.stores.rootResults
      .get(scope, rootKey, host.clock.now())
      .catch(() => undefined);
    return json(200, {
      rootKey,
      org: scope.org,
      uid: scope.uid,
      sessionId: root?.sessionId ?? null,
      outcome,
      uncertain,
      events,
    });
  }
  throw new HttpError("not_found", "no trails for this turn among the people this host knows");
}

const MAX_LATE_USAGE = 500;

/**
 * Late authoritative usage of cut calls, per person the directory knows (the inbox is partitioned
 * by scope, as every store): evidence beside the uncertain turns, never a bill. `available: false`
 * when the store set has no inbox.
 */
async function lateUsageOf(host: HostContext, org: string | undefined): Promise<unknown> {
  const inbox = host.runtime.stores.usageInbox;
  if (!inbox) return { available: false, observations: [] };
  if (org !== undefined) clinicOf(host, org);
  const observations: unknown[] = [];
  for (const scope of host.directory.scopes(org)) {
    let cursor: string | undefined;
    do {
      const page = await inbox.list(scope, { limit: 100, ...(cursor ? { cursor } : {}) });
      for (const { scope: s, ...o } of page.items)
        observations.push({ org: s.org, uid: s.uid, ...o });
      cursor = page.nextCursor;
    } while (cursor && observations.length <= MAX_LATE_USAGE);
    if (observations.length > MAX_LATE_USAGE) break;
  }
  return {
    available: true,
    observations: observations.slice(0, MAX_LATE_USAGE),
    truncated: observations.length > MAX_LATE_USAGE,
  };
}

function safeView(view: Parameters<typeof viewResponse>[0]): unknown {
  try {
    return viewResponse(view).body;
  } catch {
    return { status: view.status };
  }
}

async function getSpend(host: HostContext, route: RouteRequest): Promise<Response> {
  const days = Math.min(60, Math.max(1, Number(route.url.searchParams.get("days") ?? "14") || 14));
  const now = host.clock.now();
  const to = utcDay(now);
  const from = utcDay(now - (days - 1) * DAY_MS);
  const capMicros = usdToMicros(host.caps.perClinicDayUsd);
  const tenants = [];
  for (const clinic of host.desk.clinics()) {
    const rows = await host.runtime.stores.spend.tenantDays(clinic.org, { from, to });
    const byDay = new Map(rows.map((r) => [r.day, r.usdMicros]));
    const series = Array.from({ length: days }, (_, i) => {
      const day = utcDay(now - (days - 1 - i) * DAY_MS);
      const usdMicros = byDay.get(day) ?? 0;
      return { day, usdMicros, usd: microsToUsd(usdMicros) };
    });
    tenants.push({ org: clinic.org, name: clinic.name, capUsdMicros: capMicros, days: series });
  }
  return json(200, {
    from,
    to,
    caps: {
      perTurnUsd: host.caps.perTurnUsd,
      perClinicDayUsd: host.caps.perClinicDayUsd,
      action: "block",
    },
    tenants,
  });
}

async function answerAsk(
  host: HostContext,
  route: RouteRequest,
  allowed: boolean,
): Promise<Response> {
  const id = validateId("askId", route.params.askId);
  const outcome = await host.asks.answer(id, allowed);
  if (outcome === "unknown")
    throw new HttpError(
      "not_found",
      "no pending ask with this id (answered, withdrawn or never made)",
    );
  if (outcome !== "answered")
    throw new HttpError("ask_refused", `this ask cannot take a decision: ${outcome}`);
  return json(200, { askId: id, state: allowed ? "approved" : "denied" });
}

async function postToken(host: HostContext, route: RouteRequest): Promise<Response> {
  const body = await readJsonObject(route.request, host.http.bodyLimit);
  onlyFields(body, ["org", "uid", "ttlSeconds"]);
  const scope = normalizeScope({ org: body.org, uid: body.uid });
  clinicOf(host, scope.org);
  const ttl = body.ttlSeconds === undefined ? undefined : Number(body.ttlSeconds);
  if (ttl !== undefined && (!Number.isSafeInteger(ttl) || ttl < 60 || ttl > 7 * 86_400))
    throw new HttpError("invalid_input", "ttlSeconds must be an integer 60-604800");
  host.directory.saw(scope);
  const minted = await mintToken(host.secrets.jwtSecret, scope, {
    now: host.clock.now(),
    ...(ttl ? { ttlSeconds: ttl } : {}),
  });
  return json(201, { org: scope.org, uid: scope.uid, ...minted });
}

function tenantsBody(host: HostContext): unknown {
  return {
    tenants: host.desk.clinics().map((c) => ({
      org: c.org,
      name: c.name,
      people: host.directory
        .people(c.org)
        .map((uid) => ({ uid, name: host.desk.patient(c.org, uid)?.name ?? null })),
    })),
  };
}

/** Operator routes: the admin token is checked first (401), never a tenant token. */
export function adminRoutes(router: Router, host: HostContext): void {
  const on = (method: string, path: string, handler: (r: RouteRequest) => Promise<Response>) =>
    router.on(method, path, async (r) => {
      verifyAdmin(r.request, host.secrets.adminToken);
      return handler(r);
    });
  on("GET", "/v1/admin/tenants", async () => json(200, tenantsBody(host)));
  on("GET", "/v1/admin/tenants/:org/sessions", async (r) =>
    json(200, {
      org: r.params.org,
      sessions: await sessionsOf(host, clinicOf(host, r.params.org as string)),
    }),
  );
  on("GET", "/v1/admin/tenants/:org/sessions/:uid/:sessionId", async (r) => {
    const scope = normalizeScope({
      org: clinicOf(host, r.params.org as string),
      uid: r.params.uid,
    });
    const sessionId = validateId("sessionId", r.params.sessionId);
    const view = await host.runtime.stores.sessions.load(scope, sessionId);
    const messages = transcriptOf(view.messages);
    return json(200, {
      org: scope.org,
      uid: scope.uid,
      sessionId,
      revision: view.revision,
      erased: view.erased,
      messages,
      turns: turnsOf(messages),
    });
  });
  on("GET", "/v1/admin/tenants/:org/sessions/:uid/:sessionId/trails", async (r) => {
    const scope = normalizeScope({
      org: clinicOf(host, r.params.org as string),
      uid: r.params.uid,
    });
    const sessionId = validateId("sessionId", r.params.sessionId);
    return json(200, {
      org: scope.org,
      uid: scope.uid,
      sessionId,
      events: await trailOf(host, scope, { sessionId }),
    });
  });
  // Everything of one person at a clinic (their scope), in every store: the runtime's `eraseScope`.
  on("DELETE", "/v1/admin/tenants/:org/people/:uid", async (r) => {
    const scope = normalizeScope({
      org: clinicOf(host, r.params.org as string),
      uid: r.params.uid,
    });
    const report = await host.runtime.eraseScope(scope);
    return json(200, {
      org: scope.org,
      uid: scope.uid,
      erased: true,
      fencedAdmissions: report.fencedAdmissions,
    });
  });
  on("GET", "/v1/admin/turns/:rootKey", (r) => getTurnTrails(host, r));
  on("GET", "/v1/admin/spend", (r) => getSpend(host, r));
  on("GET", "/v1/admin/uncertain", async (r) =>
    json(200, { turns: host.directory.uncertainTurns(r.url.searchParams.get("org") ?? undefined) }),
  );
  on("GET", "/v1/admin/late-usage", async (r) =>
    json(200, await lateUsageOf(host, r.url.searchParams.get("org") ?? undefined)),
  );
  on("GET", "/v1/admin/asks", async (r) =>
    json(200, { asks: await host.asks.pending(r.url.searchParams.get("org") ?? undefined) }),
  );
  on("POST", "/v1/admin/asks/:askId/approve", (r) => answerAsk(host, r, true));
  on("POST", "/v1/admin/asks/:askId/deny", (r) => answerAsk(host, r, false));
  on("POST", "/v1/admin/tokens", (r) => postToken(host, r));
  fenceRoutes(on, host);
  memoryRoutes(on, host);
  routineRoutes(on, host);
  on("GET", "/v1/admin/tenants/:org/outbox", async (r) =>
    json(200, { messages: host.desk.outbox(clinicOf(host, r.params.org as string)) }),
  );
}
