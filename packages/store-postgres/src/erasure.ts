import {
  type ErasureReport,
  isErasedMark,
  type Scope,
  type SessionErasure,
  validateId,
} from "@alma-harness/core";
import { scopeKey } from "@alma-harness/core/stores";
import type { Conn } from "./conn.js";
import { eraseMemoryRows } from "./memory.js";
import { eraseParkedRows } from "./parked.js";
import type { Queryable } from "./pg.js";

/** One session as the statements erase it: its id, its tombstone mark, the audit trail's stored value for it. */
export interface ErasedSession {
  readonly id: string;
  readonly mark: string;
  /** Absent: the audit events are left to the caller (a scope erasure removes them all at once). */
  readonly audit?: string;
}

/** Writes and erasure of one scope's labels serialize on this transaction-scoped advisory lock. */
export async function lockLabelScope(tx: Queryable, key: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`alma:labels:${key}`]);
}

/** The session's transcript gone; one tombstone row under its mark (a row under its id, an old tombstone included, goes). */
export async function eraseSessionRows(
  tx: Queryable,
  key: string,
  s: ErasedSession,
): Promise<void> {
  await tx.query("DELETE FROM messages WHERE scope = $1 AND session_id = $2", [key, s.id]);
  await tx.query("DELETE FROM sessions WHERE scope = $1 AND session_id = $2", [key, s.id]);
  await tx.query(
    `INSERT INTO sessions (scope, session_id, revision, view_offset, updated_at, erased) VALUES ($1, $2, 0, 0, 0, true)
     ON CONFLICT (scope, session_id) DO UPDATE SET revision = 0, view_offset = 0, erased = true`,
    [key, s.mark],
  );
}

/** The session's labels gone; one tombstone row under its mark (the caller holds the scope's label lock). */
export async function eraseLabelRows(tx: Queryable, key: string, s: ErasedSession): Promise<void> {
  await tx.query("DELETE FROM session_labels WHERE scope = $1 AND session_id = $2", [key, s.id]);
  await tx.query(
    `INSERT INTO session_labels (scope, session_id, labels, erased) VALUES ($1, $2, NULL, true)
     ON CONFLICT (scope, session_id) DO UPDATE SET labels = NULL, erased = true`,
    [key, s.mark],
  );
}

/** The session's results in `table` tombstoned: no envelope, the mark for the session id. Returns the rows not erased before. */
export async function eraseResultRows(
  tx: Queryable,
  table: string,
  key: string,
  s: ErasedSession,
): Promise<number> {
  const { rows } = await tx.query<{ n: string }>(
    `WITH hit AS (SELECT result_id, state FROM ${table} WHERE scope = $1 AND session_id = $2 FOR UPDATE),
     done AS (UPDATE ${table} r SET state = 'erased', envelope = NULL, session_id = $3 FROM hit WHERE r.scope = $1 AND r.result_id = hit.result_id)
     SELECT COUNT(*) FILTER (WHERE state <> 'erased') AS n FROM hit`,
    [key, s.id, s.mark],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Admissions and per-session spend gone; journal records, reservations and receipts kept under the mark. Returns the holding admissions. */
async function eraseAccountRows(tx: Queryable, key: string, s: ErasedSession): Promise<number> {
  const { rows } = await tx.query<{ state: string }>(
    "DELETE FROM admissions WHERE scope = $1 AND session_id = $2 RETURNING state",
    [key, s.id],
  );
  // Journal records and held reservations stay under the mark: a call in flight can still settle.
  await tx.query(
    "UPDATE execution SET session_id = $3, claim = jsonb_set(claim::jsonb, '{sessionId}', to_jsonb($3::text))::text WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  await tx.query("DELETE FROM spend_sessions WHERE scope = $1 AND session_id = $2", [key, s.id]);
  await tx.query(
    "UPDATE spend_reservations SET session_id = $3 WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  await tx.query(
    "UPDATE settlements SET session_id = $3, record = jsonb_set(record::jsonb, '{sessionId}', to_jsonb($3::text))::text WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  // Late usage is evidence like a receipt: kept, under the mark.
  await tx.query(
    "UPDATE usage_inbox SET session_id = $3, record = jsonb_set(record::jsonb, '{sessionId}', to_jsonb($3::text))::text WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  // A batch job's items keep their claim under the mark, as the receipts they settle into.
  await tx.query(
    "UPDATE model_job_items SET session_id = $3, record = jsonb_set(record::jsonb, '{sessionId}', to_jsonb($3::text))::text WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  // A routine run is content-free: kept, under the mark.
  await tx.query(
    "UPDATE routine_runs SET session_id = $3, record = jsonb_set(record::jsonb, '{sessionId}', to_jsonb($3::text))::text WHERE scope = $1 AND session_id = $2",
    [key, s.id, s.mark],
  );
  if (s.audit !== undefined)
    await tx.query("DELETE FROM audit_events WHERE scope = $1 AND session_id = $2", [key, s.audit]);
  return rows.filter((r) => r.state === "active" || r.state === "uncertain").length;
}

/**
 * Erasure in PostgreSQL: every table of both schemas in one transaction on the main pool (the root
 * schema's table named with its schema; both are in one database), a durability point. What this
 * does and does not take out of the database's files (dead tuples until VACUUM, WAL, backups) is
 * in the package README.
 */
export class PgErasure implements SessionErasure {
  readonly #db: Conn;
  readonly #tables: { readonly results: string; readonly root: string };

  constructor(db: Conn, schemas: { readonly schema: string; readonly rootSchema: string }) {
    this.#db = db;
    this.#tables = { results: `${schemas.schema}.results`, root: `${schemas.rootSchema}.results` };
  }

  async eraseSession(
    scope: Scope,
    sessionId: string,
    opts: { readonly auditSessionId: string },
  ): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const audit = validateId("auditSessionId", opts?.auditSessionId);
    const fencedAdmissions = await this.#db.transaction(
      async (tx) => {
        await lockLabelScope(tx, key);
        return this.#erase(tx, key, { id, mark: this.#db.mark(s, id), audit });
      },
      { durable: true },
    );
    return Object.freeze({ fencedAdmissions });
  }

  async eraseScope(scope: Scope): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    const fencedAdmissions = await this.#db.transaction(
      async (tx) => {
        await lockLabelScope(tx, key);
        let fenced = 0;
        for (const id of await this.#sessionsOf(tx, key))
          fenced += await this.#erase(tx, key, { id, mark: this.#db.mark(s, id) });
        await tx.query("DELETE FROM audit_events WHERE scope = $1", [key]);
        // Memory of the scope: every episode and fact, from any session (one already erased included).
        await eraseMemoryRows(tx, key);
        // The scope's routines (their goals are its content) and their runs go with it.
        await tx.query("DELETE FROM routines WHERE scope = $1", [key]);
        await tx.query("DELETE FROM routine_runs WHERE scope = $1", [key]);
        await eraseParkedRows(tx, key);
        await tx.query(
          "INSERT INTO sealed_label_scopes (scope) VALUES ($1) ON CONFLICT (scope) DO NOTHING",
          [key],
        );
        return fenced;
      },
      { durable: true },
    );
    return Object.freeze({ fencedAdmissions });
  }

  async #erase(tx: Queryable, key: string, s: ErasedSession): Promise<number> {
    // The session's parked turns first (their continuations hold its batch; asks go with them):
    // the parked row before the admissions, the order a park and a claim lock them in.
    await eraseParkedRows(tx, key, s.id);
    await eraseSessionRows(tx, key, s);
    await eraseLabelRows(tx, key, s);
    await eraseResultRows(tx, this.#tables.results, key, s);
    await eraseResultRows(tx, this.#tables.root, key, s);
    // Memory learned in the session: its episodes and facts (no tombstone: nothing of it stays).
    await eraseMemoryRows(tx, key, s.id);
    return eraseAccountRows(tx, key, s);
  }

  /** Every session id the scope still holds anywhere (marks excluded: those are erased already). */
  async #sessionsOf(tx: Queryable, key: string): Promise<readonly string[]> {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT session_id AS id FROM sessions WHERE scope = $1 UNION SELECT session_id FROM messages WHERE scope = $1
       UNION SELECT session_id FROM ${this.#tables.results} WHERE scope = $1 UNION SELECT session_id FROM ${this.#tables.root} WHERE scope = $1
       UNION SELECT session_id FROM session_labels WHERE scope = $1 UNION SELECT session_id FROM settlements WHERE scope = $1
       UNION SELECT session_id FROM admissions WHERE scope = $1 UNION SELECT session_id FROM spend_sessions WHERE scope = $1
       UNION SELECT session_id FROM spend_reservations WHERE scope = $1 UNION SELECT session_id FROM execution WHERE scope = $1
       UNION SELECT session_id FROM usage_inbox WHERE scope = $1 UNION SELECT session_id FROM model_job_items WHERE scope = $1 UNION SELECT session_id FROM routine_runs WHERE scope = $1
       UNION SELECT session_id FROM parked_turns WHERE scope = $1`,
      [key],
    );
    return rows.map((r) => r.id).filter((id) => !isErasedMark(id));
  }
}
