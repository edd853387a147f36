import type { AuditEvent, AuditLog, AuditQuery, AuditRecord, Scope } from "@alma-harness/core";
import {
  type AuditRow,
  auditFromRow,
  normalizeAuditEvent,
  normalizeAuditQuery,
  pageOfFetched,
  RECORD_VERSION,
  scopeKey,
} from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";

/** The audit log in SQLite: one row per event, `seq` from the table's autoincrement (append order). */
export class SqliteAuditLog implements AuditLog {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async append(event: AuditEvent): Promise<void> {
    const e = normalizeAuditEvent(event);
    const { key } = scopeKey(e.scope);
    // A write like any other: in `grouped` mode it rides in the transaction of the writes around it.
    this.#db.write(() =>
      this.#db
        .stmt(
          "INSERT INTO audit_events (scope, session_id, turn_id, trail, v, event) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .run(key, e.sessionId, e.turnId, e.trail, RECORD_VERSION, JSON.stringify(e)),
    );
  }

  async query(
    scope: Scope,
    query?: AuditQuery,
  ): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const q = normalizeAuditQuery(query);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT seq, v, event FROM audit_events WHERE scope = ? AND seq > ?
             AND (? IS NULL OR session_id = ?) AND (? IS NULL OR turn_id = ?) AND (? IS NULL OR trail = ?)
             ORDER BY seq LIMIT ?`,
          )
          .all(
            key,
            q.after ?? 0,
            q.sessionId ?? null,
            q.sessionId ?? null,
            q.turnId ?? null,
            q.turnId ?? null,
            q.trail ?? null,
            q.trail ?? null,
            q.limit + 1,
          ) as AuditRow[],
    );
    return Object.freeze(pageOfFetched(rows.map(auditFromRow), q.limit, (r) => [r.seq]));
  }
}
