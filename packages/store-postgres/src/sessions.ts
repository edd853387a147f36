import {
  type AppendOpts,
  DuplicateEventError,
  FenceError,
  type Msg,
  ScopeFencedError,
  type Scope,
  type SessionStore,
  type SessionSummary,
  type SessionView,
} from "@alma-harness/core";
import {
  appendedPositions,
  emptySessionView,
  type MessageRow,
  messageFromRow,
  NO_EVENTS,
  prepareAppend,
  prepareFindEvents,
  prepareKeyed,
  prepareSessionList,
  RECORD_VERSION,
  type SessionSummaryRow,
  sessionPage,
} from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { thenFenced } from "./fences.js";
import { eraseSessionRows } from "./erasure.js";
import { type Queryable, queryEach } from "./pg.js";

interface SessionRow {
  readonly revision: number;
  readonly view_offset: number;
  readonly erased: boolean;
}

/**
 * Sessions in PostgreSQL. An append reads its admission `FOR SHARE` and the session `FOR UPDATE`
 * in the transaction that writes the batch: the admission cannot be marked uncertain, finished or
 * released until the batch has committed, and appends to one session are serialized.
 */
export class PgSessionStore implements SessionStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async load(scope: Scope, sessionId: string): Promise<SessionView> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    // One statement, one snapshot: the session row and its messages always agree, and an erased
    // session's tombstone (under its mark) is read with them.
    const { rows } = await this.#db.query<
      SessionRow & { v: number | null; body: string | null; tombstone: boolean }
    >(
      `SELECT s.revision, s.view_offset, s.erased, m.v, m.body, m.position, false AS tombstone
       FROM sessions s
       LEFT JOIN messages m ON NOT s.erased AND m.scope = s.scope AND m.session_id = s.session_id AND m.position >= s.view_offset
       WHERE s.scope = $1 AND s.session_id = $2
       UNION ALL
       SELECT NULL, NULL, NULL, NULL, NULL, NULL, true FROM sessions t
       WHERE t.scope = $1 AND t.session_id = $3 AND t.erased
       ORDER BY tombstone, position`,
      [key, id, this.#db.mark(scope, id)],
    );
    const head = rows[0]?.tombstone === false ? rows[0] : undefined;
    if (!head || head.erased)
      return emptySessionView(head !== undefined || rows.some((r) => r.tombstone));
    const messages = rows.flatMap((r) =>
      r.tombstone || r.body === null ? [] : [messageFromRow({ v: r.v ?? 0, body: r.body })],
    );
    return Object.freeze({
      messages: Object.freeze(messages),
      revision: head.revision,
      offset: head.view_offset,
      erased: false,
    });
  }

  async append(
    scope: Scope,
    sessionId: string,
    messages: readonly Msg[],
    opts: AppendOpts & { readonly now: number },
  ): Promise<{ readonly revision: number }> {
    const { key, id, admissionId, now, batch, events, bodies } = prepareAppend(
      scope,
      sessionId,
      messages,
      opts,
    );
    return this.#db.transaction(async (tx) => {
      const session = await holdAndLock(tx, key, id, admissionId, now, this.#db.mark(scope, id));
      await checkEvents(tx, key, id, events);
      const start = session.revision;
      const { revision, offset } = appendedPositions(batch, start, session.view_offset);
      // The batch and the session's new revision in one round trip.
      await queryEach(tx, [
        [
          `INSERT INTO messages (scope, session_id, position, event_id, v, body)
           SELECT $1, $2, $3 + i - 1, e, $4, b FROM unnest($5::text[], $6::text[]) WITH ORDINALITY AS x(e, b, i)`,
          [key, id, start, RECORD_VERSION, batch.map((m) => m.meta?.event?.id ?? null), bodies],
        ],
        [
          "UPDATE sessions SET revision = $3, view_offset = $4, updated_at = $5 WHERE scope = $1 AND session_id = $2",
          [key, id, revision, offset, now],
        ],
      ]);
      return Object.freeze({ revision });
    });
  }

  async findEvents(
    scope: Scope,
    sessionId: string,
    eventIds: readonly string[],
  ): Promise<readonly Msg[]> {
    const { key, id, ids } = prepareFindEvents(scope, sessionId, eventIds);
    if (ids.length === 0) return NO_EVENTS;
    const { rows } = await this.#db.query<MessageRow>(
      `SELECT m.v, m.body FROM messages m JOIN sessions s ON s.scope = m.scope AND s.session_id = m.session_id
       WHERE m.scope = $1 AND m.session_id = $2 AND NOT s.erased AND m.event_id = ANY($3::text[]) ORDER BY m.position`,
      [key, id, ids],
    );
    return Object.freeze(rows.map(messageFromRow));
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number } = {},
  ): Promise<{ readonly items: readonly SessionSummary[]; readonly nextCursor?: string }> {
    const { key, limit, after } = prepareSessionList(scope, opts);
    const { rows } = await this.#db.query<SessionSummaryRow>(
      `SELECT session_id, revision, updated_at FROM sessions WHERE scope = $1 AND NOT erased AND session_id > $2
       ORDER BY session_id LIMIT $3`,
      [key, after, limit + 1],
    );
    return sessionPage(rows, limit);
  }

  async erase(scope: Scope, sessionId: string): Promise<void> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    // An erasure is a durability point.
    await this.#db.transaction(
      (tx) => eraseSessionRows(tx, key, { id, mark: this.#db.mark(scope, id) }),
      { durable: true },
    );
  }
}

/**
 * In one round trip (`thenFenced`): the admission `FOR SHARE` (held until commit, so no transition
 * of it can slip in before the batch lands), the scope fence, then the session row created when
 * absent (unless the session's tombstone is under `mark`: then there is no row) and locked, which
 * serializes appends and erasure per session. A refusal throws, and the transaction (or its
 * savepoint in a unit) takes the created row back.
 */
async function holdAndLock(
  tx: Queryable,
  key: string,
  sessionId: string,
  admissionId: string,
  now: number,
  mark: string,
): Promise<SessionRow> {
  const { rows, fenced, after } = await thenFenced<{
    session_id: string;
    state: string;
    deadline_at: number;
  }>(
    tx,
    "SELECT session_id, state, deadline_at FROM admissions WHERE scope = $1 AND admission_id = $2 FOR SHARE",
    [key, admissionId],
    key,
    undefined,
    [
      [
        `INSERT INTO sessions (scope, session_id, revision, view_offset, updated_at)
         SELECT $1, $2, 0, 0, $3 WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE scope = $1 AND session_id = $4 AND erased)
         ON CONFLICT (scope, session_id) DO NOTHING`,
        [key, sessionId, now, mark],
      ],
      [
        "SELECT revision, view_offset, erased FROM sessions WHERE scope = $1 AND session_id = $2 FOR UPDATE",
        [key, sessionId],
      ],
    ],
  );
  const admission = rows[0];
  if (
    admission?.state !== "active" ||
    admission.session_id !== sessionId ||
    now >= admission.deadline_at
  )
    throw new FenceError();
  if (fenced) throw new ScopeFencedError();
  const session = after[1]?.rows[0] as SessionRow | undefined;
  if (!session || session.erased) throw new FenceError("the session was erased");
  return session;
}

async function checkEvents(
  tx: Queryable,
  key: string,
  sessionId: string,
  events: readonly string[],
): Promise<void> {
  const seen = new Set<string>();
  for (const event of events) {
    if (seen.has(event)) throw new DuplicateEventError(event);
    seen.add(event);
  }
  if (events.length === 0) return;
  const { rows } = await tx.query<{ event_id: string }>(
    "SELECT event_id FROM messages WHERE scope = $1 AND session_id = $2 AND event_id = ANY($3::text[])",
    [key, sessionId, [...events]],
  );
  const present = new Set(rows.map((r) => r.event_id));
  const first = events.find((e) => present.has(e));
  if (first !== undefined) throw new DuplicateEventError(first);
}
