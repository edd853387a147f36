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
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";

const ONE =
  "INSERT INTO audit_events (scope, session_id, turn_id, trail, v, event) VALUES ($1, $2, $3, $4, $5, $6)";
/** Rows in the order given (`WITH ORDINALITY`): `seq` keeps the append order. */
const BATCH = `INSERT INTO audit_events (scope, session_id, turn_id, trail, v, event)
  SELECT s, se, t, tr, ${RECORD_VERSION}, e
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS r(s, se, t, tr, e, n)
  ORDER BY n`;

/**
 * The audit log in PostgreSQL. `seq` is an identity column: append order within one connection;
 * across concurrent writers a lower seq may commit after a higher one, so a cursor is an
 * observation point, not a gap-free offset (the engine's own appends are awaited in order).
 */
export class PgAuditLog implements AuditLog {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  /**
   * In a grouped unit the event joins the unit's next statement: a turn's trail records go as one
   * multi-row insert in the transaction of the step they describe (`Conn.append`).
   */
  async append(event: AuditEvent): Promise<void> {
    const e = normalizeAuditEvent(event);
    const { key } = scopeKey(e.scope);
    const json = JSON.stringify(e);
    await this.#db.append(ONE, [key, e.sessionId, e.turnId, e.trail, RECORD_VERSION, json], BATCH, [
      key,
      e.sessionId ?? null,
      e.turnId ?? null,
      e.trail,
      json,
    ]);
  }

  async query(
    scope: Scope,
    query?: AuditQuery,
  ): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const q = normalizeAuditQuery(query);
    const { rows } = await this.#db.query<AuditRow>(
      `SELECT seq, v, event FROM audit_events WHERE scope = $1 AND seq > $2
       AND ($3::text IS NULL OR session_id = $3) AND ($4::text IS NULL OR turn_id = $4) AND ($5::text IS NULL OR trail = $5)
       ORDER BY seq LIMIT $6`,
      [key, q.after ?? 0, q.sessionId ?? null, q.turnId ?? null, q.trail ?? null, q.limit + 1],
    );
    return Object.freeze(pageOfFetched(rows.map(auditFromRow), q.limit, (r) => [r.seq]));
  }
}
