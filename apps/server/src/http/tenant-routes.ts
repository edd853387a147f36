import {
  type ConversationView,
  conversationRootKey,
  type RecordedEvent,
  type RunTurnRequest,
} from "@alma-harness/conversation";
import { type Scope, validateId } from "@alma-harness/core";
import { triageIncoming } from "../agent/triage.js";
import { NO_SLOT, type Release } from "../turn-limit.js";
import { verifyTenant } from "./auth.js";
import { onlyFields, readJsonObject } from "./body.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import type { RouteRequest, Router } from "./router.js";
import { readCursor } from "./event-ids.js";
import { followTurnSse } from "./follow-turn.js";
import { streamTurnSse } from "./stream-turn.js";
import { transcriptOf, turnsOf } from "./transcript.js";
import { viewResponse } from "./views.js";

type TenantHandler = (route: RouteRequest, scope: Scope) => Promise<Response>;

/**
 * Every tenant route derives the scope from the verified token first (401 before anything else),
 * refuses tenants the host does not serve (403), and only then reads the body.
 */
export function tenant(host: HostContext, handler: TenantHandler) {
  return async (route: RouteRequest): Promise<Response> => {
    const scope = await verifyTenant(route.request, host.secrets.jwtSecret, () => host.clock.now());
    if (!host.desk.clinic(scope.org))
      throw new HttpError("forbidden", "this host does not serve this token's tenant");
    host.directory.saw(scope);
    return handler(route, scope);
  };
}

/**
 * How long a request waits for its turn: `Prefer: respond-async` means not at all, `wait=N`
 * (seconds) means up to N, never more than the host allows (`maxMs`); otherwise `fallbackMs`.
 */
export function preferredWait(request: Request, fallbackMs: number, maxMs = fallbackMs): number {
  const prefer = (request.headers.get("prefer") ?? "").toLowerCase();
  if (/\brespond-async\b/.test(prefer)) return 0;
  const m = /\bwait\s*=\s*(\d{1,6})\b/.exec(prefer);
  return m ? Math.min(maxMs, Number(m[1]) * 1000) : fallbackMs;
}

function wantsSse(request: Request): boolean {
  return /\btext\/event-stream\b/i.test(request.headers.get("accept") ?? "");
}

/** The promise's value, or undefined when `ms` passes first; the timer never outlives the race. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** How often a long poll on a parked turn reads it again (its decision may come from any process). */
const PARKED_POLL_MS = 250;

/**
 * A view as a response. An `in_progress` view first waits (up to `ms`) for the turn if it is live
 * here; an `awaiting_approval` one is read again until a decision moves it (the resumed run then
 * waited for as a live one) or `ms` passes.
 */
export async function viewReply(
  host: HostContext,
  view: ConversationView,
  ms: number,
  extra: Record<string, unknown> = {},
  scope?: Scope,
): Promise<Response> {
  const until = host.clock.now() + ms;
  let settled = view;
  while (settled.status === "awaiting_approval" && scope && host.clock.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, PARKED_POLL_MS));
    settled = (await host.runtime.runner.read(scope, settled.rootKey)) ?? settled;
  }
  const left = Math.max(0, until - host.clock.now());
  if (settled.status === "in_progress")
    settled = (await host.turns.wait(settled.rootKey, left)) ?? settled;
  const { status, body } = viewResponse(settled);
  return json(status, { ...body, ...extra });
}

/**
 * An erased session stays erased: the store fences every later append, so a turn there would run
 * (and spend) only to end uncertain. The host refuses it up front instead; the store's fence
 * remains the guarantee if an erasure races this check.
 */
export async function assertLive(
  host: HostContext,
  scope: Scope,
  sessionId: string,
): Promise<void> {
  const view = await host.runtime.stores.sessions.load(scope, sessionId);
  if (view.erased)
    throw new HttpError("unavailable", "this session was erased; start a new session");
}

/** The request's turn, read and checked: nothing has started, nothing is held. */
async function readTurn(
  host: HostContext,
  route: RouteRequest,
  scope: Scope,
): Promise<{ turn: RunTurnRequest; rootKey: string }> {
  const sessionId = validateId("sessionId", route.params.sessionId);
  const key = route.request.headers.get("idempotency-key");
  if (key === null)
    throw new HttpError(
      "missing_idempotency_key",
      "send the message's delivery id in the Idempotency-Key header",
    );
  const idempotencyKey = validateId("Idempotency-Key", key);
  host.shutdown.admit();
  const body = await readJsonObject(route.request, host.http.bodyLimit);
  onlyFields(body, ["input"]);
  if (body.input === undefined)
    throw new HttpError("invalid_input", "the body needs an input (text or a user message)");
  const turn: RunTurnRequest = {
    scope,
    sessionId,
    idempotencyKey,
    input: body.input as RunTurnRequest["input"],
    intent: host.intent,
    signal: host.shutdown.signal,
  };
  await assertLive(host, scope, sessionId);
  // Checked again after the last await: no turn starts once shutdown has begun.
  host.shutdown.admit();
  return { turn, rootKey: conversationRootKey(scope, sessionId, idempotencyKey) };
}

/**
 * The tenant's turn slot for this request, taken before anything may call a model. A key the host
 * already knows (running here, or stored) takes none and is never refused: its retry replays or
 * follows that turn and starts nothing. Over the limit, a new key is `429 too_many_turns`.
 */
export async function turnSlot(host: HostContext, scope: Scope, rootKey: string): Promise<Release> {
  if (host.turns.owner(rootKey)) return NO_SLOT;
  const release = host.turnLimit.tryTake(scope.org);
  if (release) return release;
  if (await host.runtime.runner.read(scope, rootKey)) return NO_SLOT;
  throw host.turnLimit.refusal();
}

async function postTurn(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const { turn, rootKey } = await readTurn(host, route, scope);
  const release = await turnSlot(host, scope, rootKey);
  try {
    // Turns ready together start one after another, the loop polling its sockets between them.
    await host.loop.enter();
    // The wait may outlast the beginning of a shutdown: no turn starts after it.
    host.shutdown.admit();
    if (wantsSse(route.request)) return streamTurnSse(host, turn, rootKey, release);
    return await jsonTurn(host, route.request, turn, rootKey, release);
  } catch (error) {
    // Nothing started, or the turn has settled already (and released): the slot is free either way.
    release();
    throw error;
  }
}

/** A JSON turn: triage (when on), then the turn, whose ending frees the slot; waits up to `waitMs`. */
async function jsonTurn(
  host: HostContext,
  request: Request,
  turn: RunTurnRequest,
  rootKey: string,
  release: Release,
): Promise<Response> {
  const { scope, sessionId, idempotencyKey } = turn;
  // With triage on, the message is classified first by one governed single call (its key is this delivery's).
  const triage = host.triage
    ? await triageIncoming(host.runtime.steps, scope, sessionId, idempotencyKey, turn.input)
    : undefined;
  const extra = triage ? { triage } : {};
  host.shutdown.admit();
  const waitMs = preferredWait(request, host.http.waitMs);
  const started = host.clock.now();
  const running = host.turns.run(rootKey, scope, sessionId, started, () =>
    host.runtime.runner.runTurn(turn),
  );
  void running.then(release, release);
  const view = await within(running, waitMs);
  if (!view) return json(202, { status: "in_progress", rootKey, ...extra });
  return viewReply(host, view, Math.max(0, waitMs - (host.clock.now() - started)), extra);
}

async function getTurn(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const rootKey = validateId("rootKey", route.params.rootKey);
  const cursor = wantsSse(route.request)
    ? readCursor(route.request.headers.get("last-event-id"))
    : undefined;
  const view = await host.runtime.runner.read(scope, rootKey);
  // Another tenant's key reads as absent: its existence is not disclosed.
  if (!view) throw new HttpError("not_found", "no turn with this key for you");
  // A stream reader reconnecting (or reading on after a park): from its last event id.
  if (cursor) return followTurnSse(host, scope, rootKey, cursor);
  return viewReply(host, view, preferredWait(route.request, 0, host.http.waitMs), {}, scope);
}

async function postEvents(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const sessionId = validateId("sessionId", route.params.sessionId);
  host.shutdown.admit();
  const body = await readJsonObject(route.request, host.http.bodyLimit);
  onlyFields(body, ["events"]);
  await assertLive(host, scope, sessionId);
  host.shutdown.admit();
  const result = await host.runtime.runner.recordEvents({
    scope,
    sessionId,
    events: body.events as readonly RecordedEvent[],
  });
  if (result.status === "busy")
    throw new HttpError(
      "busy",
      "a turn or another batch holds this session; retry the same batch later",
      { retryable: true },
    );
  return json(200, result);
}

async function deleteSession(
  host: HostContext,
  route: RouteRequest,
  scope: Scope,
): Promise<Response> {
  const sessionId = validateId("sessionId", route.params.sessionId);
  const holder = await host.runtime.stores.admissions.holder(scope, sessionId);
  if (holder?.state === "active")
    throw new HttpError(
      "busy",
      "a turn is running in this session; erase it after the turn settles",
      { retryable: true },
    );
  await host.runtime.erase(scope, sessionId);
  return new Response(null, { status: 204 });
}

async function listSessions(
  host: HostContext,
  route: RouteRequest,
  scope: Scope,
): Promise<Response> {
  const cursor = route.url.searchParams.get("cursor") ?? undefined;
  const page = await host.runtime.stores.sessions.list(scope, {
    ...(cursor ? { cursor } : {}),
    limit: 50,
  });
  return json(200, page);
}

async function getSession(host: HostContext, route: RouteRequest, scope: Scope): Promise<Response> {
  const sessionId = validateId("sessionId", route.params.sessionId);
  const view = await host.runtime.stores.sessions.load(scope, sessionId);
  const entries = transcriptOf(view.messages);
  return json(200, {
    sessionId,
    revision: view.revision,
    erased: view.erased,
    messages: entries,
    turns: turnsOf(entries),
  });
}

export function tenantRoutes(router: Router, host: HostContext): void {
  const on = (
    method: string,
    path: string,
    handler: (h: HostContext, r: RouteRequest, s: Scope) => Promise<Response>,
  ) =>
    router.on(
      method,
      path,
      tenant(host, (r, s) => handler(host, r, s)),
    );
  on("POST", "/v1/sessions/:sessionId/turns", postTurn);
  on("GET", "/v1/turns/:rootKey", getTurn);
  on("POST", "/v1/sessions/:sessionId/events", postEvents);
  on("DELETE", "/v1/sessions/:sessionId", deleteSession);
  on("GET", "/v1/sessions", listSessions);
  on("GET", "/v1/sessions/:sessionId", getSession);
  on("GET", "/v1/me", async (h, _r, s) =>
    json(200, {
      org: s.org,
      uid: s.uid,
      clinic: h.desk.clinic(s.org)?.name,
      patient: h.desk.patient(s.org, s.uid)?.name ?? null,
    }),
  );
}
