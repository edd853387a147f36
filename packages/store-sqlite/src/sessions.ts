import {
  type AppendOpts,
  DuplicateEventError,
  FenceError,
  type Msg,
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
import type { SqliteDb } from "./db.js";
import { eraseSessionRows } from "./erasure.js";
import { checkFence } from "./spend.js";

interface SessionRow {
  readonly revision: number;
  readonly view_offset: number;
  readonly updated_at: number;
  readonly erased: number;
}

const SESSION =
  "SELECT revision, view_offset, updated_at, erased FROM sessions WHERE scope = ? AND session_id = ?";

/** Sessions in SQLite: the fence check, the duplicate check and the batch insert share one immediate transaction. */
export class SqliteSessionStore implements SessionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async load(scope: Scope, sessionId: string): Promise<SessionView> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    return this.#db.guard(() => {
      const session = this.#db.stmt(SESSION).get(key, id) as SessionRow | undefined;
      if (!session || session.erased)
        return emptySessionView(session !== undefined || this.#tombstoned(scope, key, id));
      const rows = this.#db
        .stmt(
          "SELECT v, body FROM messages WHERE scope = ? AND session_id = ? AND position >= ? ORDER BY position",
        )
        .all(key, id, session.view_offset) as MessageRow[];
      const messages = Object.freeze(rows.map(messageFromRow));
      return Object.freeze({
        messages,
        revision: session.revision,
        offset: session.view_offset,
        erased: false,
      });
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
    return this.#db.write(() => {
      checkFence(this.#db, key, admissionId, id, now);
      const session = this.#db.stmt(SESSION).get(key, id) as SessionRow | undefined;
      if (session ? session.erased : this.#tombstoned(scope, key, id))
        throw new FenceError("the session was erased");
      this.#checkEvents(key, id, events);
      const start = session?.revision ?? 0;
      const insert = this.#db.stmt(
        "INSERT INTO messages (scope, session_id, position, event_id, v, body) VALUES (?, ?, ?, ?, ?, ?)",
      );
      batch.forEach((msg, i) => {
        insert.run(key, id, start + i, msg.meta?.event?.id ?? null, RECORD_VERSION, bodies[i]);
      });
      const { revision, offset } = appendedPositions(batch, start, session?.view_offset ?? 0);
      this.#db
        .stmt(
          `INSERT INTO sessions (scope, session_id, revision, view_offset, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (scope, session_id) DO UPDATE SET revision = excluded.revision, view_offset = excluded.view_offset, updated_at = excluded.updated_at`,
        )
        .run(key, id, revision, offset, now);
      return Object.freeze({ revision });
    });
  }

  #checkEvents(key: string, sessionId: string, events: readonly string[]): void {
    const seen = new Set<string>();
    const exists = this.#db.stmt(
      "SELECT 1 FROM messages WHERE scope = ? AND session_id = ? AND event_id = ?",
    );
    for (const event of events) {
      if (seen.has(event) || exists.get(key, sessionId, event))
        throw new DuplicateEventError(event);
      seen.add(event);
    }
  }

  async findEvents(
    scope: Scope,
    sessionId: string,
    eventIds: readonly string[],
  ): Promise<readonly Msg[]> {
    const { key, id, ids } = prepareFindEvents(scope, sessionId, eventIds);
    if (ids.length === 0) return NO_EVENTS;
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT m.v, m.body FROM messages m JOIN sessions s ON s.scope = m.scope AND s.session_id = m.session_id
             WHERE m.scope = ? AND m.session_id = ? AND s.erased = 0 AND m.event_id IN (SELECT value FROM json_each(?))
             ORDER BY m.position`,
          )
          .all(key, id, JSON.stringify(ids)) as MessageRow[],
    );
    return Object.freeze(rows.map(messageFromRow));
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number } = {},
  ): Promise<{ readonly items: readonly SessionSummary[]; readonly nextCursor?: string }> {
    const { key, limit, after } = prepareSessionList(scope, opts);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT session_id, revision, updated_at FROM sessions
             WHERE scope = ? AND erased = 0 AND session_id > ? ORDER BY session_id LIMIT ?`,
          )
          .all(key, after, limit + 1) as SessionSummaryRow[],
    );
    return sessionPage(rows, limit);
  }

  async erase(scope: Scope, sessionId: string): Promise<void> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    this.#db.durable(() => eraseSessionRows(this.#db, key, { id, mark: this.#db.mark(scope, id) }));
  }

  /** Whether the session (no row under its id) has a tombstone under its mark. */
  #tombstoned(scope: Scope, key: string, id: string): boolean {
    return (
      (this.#db.stmt(SESSION).get(key, this.#db.mark(scope, id)) as SessionRow | undefined)
        ?.erased === 1
    );
  }
}
