import {
  type ErasureReport,
  isErasedMark,
  type Scope,
  type SessionErasure,
  validateId,
} from "@alma-harness/core";
import { scopeKey } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { eraseMemoryRows } from "./memory.js";
import { eraseParkedRows } from "./parked.js";

/** One session as the statements erase it: its id, its tombstone mark, the audit trail's stored value for it. */
export interface ErasedSession {
  readonly id: string;
  readonly mark: string;
  /** Absent: the audit events are left to the caller (a scope erasure removes them all at once). */
  readonly audit?: string;
}

/** The session's transcript gone; one tombstone row under its mark (a row under its id, an old tombstone included, goes). */
export function eraseSessionRows(db: SqliteDb, key: string, s: ErasedSession): void {
  db.stmt("DELETE FROM messages WHERE scope = ? AND session_id = ?").run(key, s.id);
  db.stmt("DELETE FROM sessions WHERE scope = ? AND session_id = ?").run(key, s.id);
  db.stmt(
    `INSERT INTO sessions (scope, session_id, revision, view_offset, updated_at, erased) VALUES (?, ?, 0, 0, 0, 1)
     ON CONFLICT (scope, session_id) DO UPDATE SET revision = 0, view_offset = 0, erased = 1`,
  ).run(key, s.mark);
}

/** The session's labels gone; one tombstone row under its mark. */
export function eraseLabelRows(db: SqliteDb, key: string, s: ErasedSession): void {
  db.stmt("DELETE FROM session_labels WHERE scope = ? AND session_id = ?").run(key, s.id);
  db.stmt(
    `INSERT INTO session_labels (scope, session_id, labels, erased) VALUES (?, ?, NULL, 1)
     ON CONFLICT (scope, session_id) DO UPDATE SET labels = NULL, erased = 1`,
  ).run(key, s.mark);
}

/** The session's results in `table` tombstoned: no envelope, the mark for the session id. Returns the rows not erased before. */
export function eraseResultRows(
  db: SqliteDb,
  table: string,
  key: string,
  s: ErasedSession,
): number {
  const fresh = db
    .stmt(
      `SELECT COUNT(*) AS n FROM ${table} WHERE scope = ? AND session_id = ? AND state != 'erased'`,
    )
    .get(key, s.id) as { n: number };
  db.stmt(
    `UPDATE ${table} SET state = 'erased', envelope = NULL, session_id = ? WHERE scope = ? AND session_id = ?`,
  ).run(s.mark, key, s.id);
  return fresh.n;
}

/** Every other row of the session: admissions and per-session spend gone; journal records, reservations and receipts kept under the mark. Returns the holding admissions. */
function eraseAccountRows(db: SqliteDb, key: string, s: ErasedSession): number {
  const holding = db
    .stmt(
      "SELECT COUNT(*) AS n FROM admissions WHERE scope = ? AND session_id = ? AND state IN ('active', 'uncertain')",
    )
    .get(key, s.id) as { n: number };
  db.stmt("DELETE FROM admissions WHERE scope = ? AND session_id = ?").run(key, s.id);
  // Journal records and held reservations stay under the mark: a call in flight can still settle.
  db.stmt(
    "UPDATE execution SET claim = json_set(claim, '$.sessionId', ?) WHERE scope = ? AND json_extract(claim, '$.sessionId') = ?",
  ).run(s.mark, key, s.id);
  db.stmt("DELETE FROM spend_sessions WHERE scope = ? AND session_id = ?").run(key, s.id);
  db.stmt("UPDATE spend_reservations SET session_id = ? WHERE scope = ? AND session_id = ?").run(
    s.mark,
    key,
    s.id,
  );
  db.stmt(
    "UPDATE settlements SET session_id = ?, record = json_set(record, '$.sessionId', ?) WHERE scope = ? AND session_id = ?",
  ).run(s.mark, s.mark, key, s.id);
  // Late usage is evidence like a receipt: kept, under the mark.
  db.stmt(
    "UPDATE usage_inbox SET session_id = ?, record = json_set(record, '$.sessionId', ?) WHERE scope = ? AND session_id = ?",
  ).run(s.mark, s.mark, key, s.id);
  // A batch job's items keep their claim under the mark, as the receipts they settle into.
  db.stmt(
    "UPDATE model_job_items SET session_id = ?, record = json_set(record, '$.sessionId', ?) WHERE scope = ? AND session_id = ?",
  ).run(s.mark, s.mark, key, s.id);
  // A routine run is content-free: kept, under the mark.
  db.stmt(
    "UPDATE routine_runs SET session_id = ?, record = json_set(record, '$.sessionId', ?) WHERE scope = ? AND session_id = ?",
  ).run(s.mark, s.mark, key, s.id);
  if (s.audit !== undefined)
    db.stmt("DELETE FROM audit_events WHERE scope = ? AND session_id = ?").run(key, s.audit);
  return holding.n;
}

/** Every session id the scope still holds anywhere (marks excluded: those are erased already). */
function sessionsOf(db: SqliteDb, key: string): readonly string[] {
  const rows = db
    .stmt(
      `SELECT session_id AS id FROM sessions WHERE scope = @key UNION SELECT session_id FROM messages WHERE scope = @key
       UNION SELECT session_id FROM results WHERE scope = @key UNION SELECT session_id FROM ${db.root.table} WHERE scope = @key
       UNION SELECT session_id FROM session_labels WHERE scope = @key UNION SELECT session_id FROM settlements WHERE scope = @key
       UNION SELECT session_id FROM admissions WHERE scope = @key UNION SELECT session_id FROM spend_sessions WHERE scope = @key
       UNION SELECT session_id FROM spend_reservations WHERE scope = @key UNION SELECT session_id FROM usage_inbox WHERE scope = @key
       UNION SELECT session_id FROM model_job_items WHERE scope = @key
       UNION SELECT session_id FROM routine_runs WHERE scope = @key UNION SELECT session_id FROM parked_turns WHERE scope = @key
       UNION SELECT json_extract(claim, '$.sessionId') FROM execution WHERE scope = @key`,
    )
    .all({ key }) as { id: string }[];
  return rows.map((r) => r.id).filter((id) => !isErasedMark(id));
}

/**
 * Erasure in SQLite: every table of both files in one immediate transaction (a durability point:
 * in `grouped` mode it commits what is pending with it), then both WALs checkpointed and truncated.
 * With `secure_delete` on (set at open), deleted content is overwritten in the pages, so after the
 * checkpoint neither the database files nor the WAL hold it. In WAL mode a transaction over the
 * attached root-results file is atomic per file, not across the two: a crash between the two
 * commits leaves the root results not yet tombstoned, and running the erasure again finishes it.
 */
export class SqliteErasure implements SessionErasure {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async eraseSession(
    scope: Scope,
    sessionId: string,
    opts: { readonly auditSessionId: string },
  ): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const audit = validateId("auditSessionId", opts?.auditSessionId);
    const session: ErasedSession = { id, mark: this.#db.mark(s, id), audit };
    const fencedAdmissions = this.#transaction(() => this.#erase(key, session));
    this.#truncate();
    return Object.freeze({ fencedAdmissions });
  }

  async eraseScope(scope: Scope): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    const fencedAdmissions = this.#transaction(() => {
      let fenced = 0;
      for (const id of sessionsOf(this.#db, key))
        fenced += this.#erase(key, { id, mark: this.#db.mark(s, id) });
      this.#db.stmt("DELETE FROM audit_events WHERE scope = ?").run(key);
      // Memory of the scope: every episode and fact, from any session (one already erased included).
      eraseMemoryRows(this.#db, key);
      // The scope's routines (their goals are its content) and their runs go with it.
      this.#db.stmt("DELETE FROM routines WHERE scope = ?").run(key);
      this.#db.stmt("DELETE FROM routine_runs WHERE scope = ?").run(key);
      eraseParkedRows(this.#db, key);
      this.#db
        .stmt("INSERT INTO sealed_label_scopes (scope) VALUES (?) ON CONFLICT (scope) DO NOTHING")
        .run(key);
      return fenced;
    });
    this.#truncate();
    return Object.freeze({ fencedAdmissions });
  }

  /**
   * `fn` as one durable transaction. A failure rolls the erasure back whole (its savepoint, in
   * `grouped` mode) and still ends the group transaction at once, so the write lock is not held
   * until the next tick.
   */
  #transaction(fn: () => number): number {
    try {
      return this.#db.durable(fn);
    } catch (error) {
      try {
        this.#db.commit();
      } catch {
        // a poisoned connection reports itself on the next call
      }
      throw error;
    }
  }

  #erase(key: string, s: ErasedSession): number {
    // The session's parked turns (their continuations hold its batch), their asks with them.
    eraseParkedRows(this.#db, key, s.id);
    eraseSessionRows(this.#db, key, s);
    eraseLabelRows(this.#db, key, s);
    eraseResultRows(this.#db, "main.results", key, s);
    eraseResultRows(this.#db, this.#db.root.table, key, s);
    // Memory learned in the session: its episodes and facts, index entries included (no tombstone: nothing of it stays).
    eraseMemoryRows(this.#db, key, s.id);
    return eraseAccountRows(this.#db, key, s);
  }

  #truncate(): void {
    truncateWal(this.#db);
  }
}

/** Checkpoints every file's WAL into the database and truncates it to zero bytes (another connection's open read can keep frames: then a later erasure or checkpoint finishes it). */
export function truncateWal(db: SqliteDb): void {
  db.guard(() => {
    db.raw.pragma("main.wal_checkpoint(TRUNCATE)");
    if (db.root.mode === "attached") db.raw.pragma("root.wal_checkpoint(TRUNCATE)");
  });
}
