import {
  type AuditRecord,
  microsToUsd,
  normalizeScope,
  type Scope,
  usdToMicros,
  utcDay,
} from "@alma-harness/core";
import { mintToken } from "./auth.js";
import { adminApi } from "./admin-api.js";
import type { HostApp } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { fenceRoutes } from "./fence-routes.js";
import { memoryRoutes } from "./memory-routes.js";
import { routineRoutes } from "./routine-routes.js";
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
async function getTurnTrails(
  host: HostContext,
  rootKey: string,
  { org, uid }: { org?: string | undefined; uid?: string | undefined },
): Promise<Response> {
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

async function getSpend(host: HostContext, days: number): Promise<Response> {
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

async function answerAsk(host: HostContext, id: string, allowed: boolean): Promise<Response> {
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

async function postToken(
  host: HostContext,
  sent: { org: string; uid: string; ttlSeconds?: number | undefined },
): Promise<Response> {
  const scope = normalizeScope({ org: sent.org, uid: sent.uid });
  clinicOf(host, scope.org);
  const ttl = sent.ttlSeconds;
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

async function transcript(host: HostContext, scope: Scope, sessionId: string) {
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
}

/** Everything of one person at a clinic (their scope), in every store: the runtime's `eraseScope`. */
async function erasePerson(host: HostContext, scope: Scope) {
  const report = await host.runtime.eraseScope(scope);
  return json(200, {
    org: scope.org,
    uid: scope.uid,
    erased: true,
    fencedAdmissions: report.fencedAdmissions,
  });
}

/** Operator routes (declared in `admin-api.ts`): the admin token is checked first (401), never a tenant token. */
export function adminRoutes(app: HostApp, host: HostContext): void {
  const r = adminApi(host);
  const person = (p: { org: string; uid: string }) =>
    normalizeScope({ org: clinicOf(host, p.org), uid: p.uid });
  app.openapi(r.tenants, () => json(200, tenantsBody(host)));
  app.openapi(r.sessions, async (c) => {
    const { org } = c.req.valid("param");
    return json(200, { org, sessions: await sessionsOf(host, clinicOf(host, org)) });
  });
  app.openapi(r.transcript, (c) => {
    const p = c.req.valid("param");
    return transcript(host, person(p), p.sessionId);
  });
  app.openapi(r.sessionTrails, async (c) => {
    const p = c.req.valid("param");
    const scope = person(p);
    const events = await trailOf(host, scope, { sessionId: p.sessionId });
    return json(200, { org: scope.org, uid: scope.uid, sessionId: p.sessionId, events });
  });
  app.openapi(r.erasePerson, (c) => erasePerson(host, person(c.req.valid("param"))));
  app.openapi(r.turnTrails, (c) =>
    getTurnTrails(host, c.req.valid("param").rootKey, c.req.valid("query")),
  );
  app.openapi(r.spend, (c) => getSpend(host, c.req.valid("query").days));
  app.openapi(r.uncertain, (c) =>
    json(200, { turns: host.directory.uncertainTurns(c.req.valid("query").org) }),
  );
  app.openapi(r.lateUsage, async (c) =>
    json(200, await lateUsageOf(host, c.req.valid("query").org)),
  );
  app.openapi(r.asks, async (c) =>
    json(200, { asks: await host.asks.pending(c.req.valid("query").org) }),
  );
  app.openapi(r.approve, (c) => answerAsk(host, c.req.valid("param").askId, true));
  app.openapi(r.deny, (c) => answerAsk(host, c.req.valid("param").askId, false));
  app.openapi(r.tokens, (c) => postToken(host, c.req.valid("json")));
  fenceRoutes(app, host);
  memoryRoutes(app, host);
  routineRoutes(app, host);
  app.openapi(r.outbox, (c) =>
    json(200, { messages: host.desk.outbox(clinicOf(host, c.req.valid("param").org)) }),
  );
}
