import {
  type ConversationView,
  conversationRootKey,
  type RecordedEvent,
  type RunTurnRequest,
} from "@alma-harness/conversation";
import type { Scope } from "@alma-harness/core";
import { triageIncoming } from "../agent/triage.js";
import { NO_SLOT, type Release } from "../turn-limit.js";
import { type HostApp, scopeOf } from "./api.js";
import type { HostContext } from "./context.js";
import { HttpError, json } from "./errors.js";
import { readCursor } from "./event-ids.js";
import { followTurnSse } from "./follow-turn.js";
import { streamTurnSse } from "./stream-turn.js";
import { tenantApi } from "./tenant-api.js";
import { turnAnswer, type WaitPreference, waitPreference } from "./prefer.js";
import { transcriptOf, turnsOf } from "./transcript.js";
import { viewResponse } from "./views.js";

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
  wait: { ms: number; pref: WaitPreference; extra?: Record<string, unknown>; scope?: Scope },
): Promise<Response> {
  const { scope, pref } = wait;
  const until = host.clock.now() + wait.ms;
  let settled = view;
  while (settled.status === "awaiting_approval" && scope && host.clock.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, PARKED_POLL_MS));
    settled = (await host.runtime.runner.read(scope, settled.rootKey)) ?? settled;
  }
  const left = Math.max(0, until - host.clock.now());
  if (settled.status === "in_progress")
    settled = (await host.turns.wait(settled.rootKey, left)) ?? settled;
  const { status, body } = viewResponse(settled);
  return turnAnswer(status, { ...body, ...wait.extra }, pref);
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

/** The request's turn, checked: nothing has started, nothing is held. */
async function readTurn(host: HostContext, scope: Scope, sent: TurnSent) {
  const turn: RunTurnRequest = {
    scope,
    sessionId: sent.sessionId,
    idempotencyKey: sent.idempotencyKey,
    input: sent.input as RunTurnRequest["input"],
    intent: host.intent,
    signal: host.shutdown.signal,
  };
  await assertLive(host, scope, sent.sessionId);
  // Checked again after the last await: no turn starts once shutdown has begun.
  host.shutdown.admit();
  return { turn, rootKey: conversationRootKey(scope, sent.sessionId, sent.idempotencyKey) };
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

/** What a turn request sent, each part checked by the route's declaration. */
interface TurnSent {
  readonly sessionId: string;
  readonly idempotencyKey: string;
  readonly input: unknown;
}

async function postTurn(
  host: HostContext,
  request: Request,
  scope: Scope,
  sent: TurnSent,
): Promise<Response> {
  const { turn, rootKey } = await readTurn(host, scope, sent);
  const release = await turnSlot(host, scope, rootKey);
  try {
    // Turns ready together start one after another, the loop polling its sockets between them.
    await host.loop.enter();
    // The wait may outlast the beginning of a shutdown: no turn starts after it.
    host.shutdown.admit();
    if (wantsSse(request)) return streamTurnSse(host, turn, rootKey, release);
    return await jsonTurn(host, request, turn, rootKey, release);
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
  const pref = waitPreference(request, host.http.waitMs, host.http.maxWaitMs);
  const started = host.clock.now();
  const running = host.turns.run(rootKey, scope, sessionId, started, () =>
    host.runtime.runner.runTurn(turn),
  );
  void running.then(release, release);
  const view = await within(running, pref.ms);
  if (!view) return turnAnswer(202, { status: "in_progress", rootKey, ...extra }, pref);
  const ms = Math.max(0, pref.ms - (host.clock.now() - started));
  return viewReply(host, view, { ms, pref, extra });
}

async function getTurn(
  host: HostContext,
  request: Request,
  scope: Scope,
  rootKey: string,
): Promise<Response> {
  const cursor = wantsSse(request) ? readCursor(request.headers.get("last-event-id")) : undefined;
  const view = await host.runtime.runner.read(scope, rootKey);
  // Another tenant's key reads as absent: its existence is not disclosed.
  if (!view) throw new HttpError("not_found", "no turn with this key for you");
  // A stream reader reconnecting (or reading on after a park): from its last event id.
  if (cursor) return followTurnSse(host, scope, rootKey, cursor);
  const pref = waitPreference(request, 0, host.http.maxWaitMs);
  return viewReply(host, view, { ms: pref.ms, pref, scope });
}

async function postEvents(
  host: HostContext,
  scope: Scope,
  sessionId: string,
  events: readonly unknown[],
): Promise<Response> {
  await assertLive(host, scope, sessionId);
  host.shutdown.admit();
  const result = await host.runtime.runner.recordEvents({
    scope,
    sessionId,
    events: events as readonly RecordedEvent[],
  });
  if (result.status === "busy")
    throw new HttpError(
      "busy",
      "a turn or another batch holds this session; retry the same batch later",
      { retryable: true },
    );
  return json(200, result);
}

async function deleteSession(host: HostContext, scope: Scope, sessionId: string) {
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

async function listSessions(host: HostContext, scope: Scope, cursor: string | undefined) {
  const page = await host.runtime.stores.sessions.list(scope, {
    ...(cursor ? { cursor } : {}),
    limit: 50,
  });
  return json(200, page);
}

async function getSession(host: HostContext, scope: Scope, sessionId: string) {
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

function me(host: HostContext, s: Scope): Response {
  return json(200, {
    org: s.org,
    uid: s.uid,
    clinic: host.desk.clinic(s.org)?.name,
    patient: host.desk.patient(s.org, s.uid)?.name ?? null,
  });
}

/** The tenant routes: each declared once in `tenant-api.ts`, served here by its handler. */
export function tenantRoutes(app: HostApp, host: HostContext): void {
  const r = tenantApi(host);
  app.openapi(r.postTurn, (c) => {
    const { sessionId } = c.req.valid("param");
    const idempotencyKey = c.req.valid("header")["idempotency-key"];
    const { input } = c.req.valid("json");
    return postTurn(host, c.req.raw, scopeOf(c), { sessionId, idempotencyKey, input });
  });
  app.openapi(r.getTurn, (c) => getTurn(host, c.req.raw, scopeOf(c), c.req.valid("param").rootKey));
  app.openapi(r.postEvents, (c) =>
    postEvents(host, scopeOf(c), c.req.valid("param").sessionId, c.req.valid("json").events),
  );
  app.openapi(r.deleteSession, (c) =>
    deleteSession(host, scopeOf(c), c.req.valid("param").sessionId),
  );
  app.openapi(r.listSessions, (c) => listSessions(host, scopeOf(c), c.req.valid("query").cursor));
  app.openapi(r.getSession, (c) => getSession(host, scopeOf(c), c.req.valid("param").sessionId));
  app.openapi(r.me, (c) => me(host, scopeOf(c)));
}
