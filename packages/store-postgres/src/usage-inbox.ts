import {
  normalizeUsageInboxQuery,
  normalizeUsageObservation,
  type Scope,
  sameUsageObservation,
  type UsageInbox,
  type UsageInboxPage,
  type UsageInboxQuery,
  type UsageObservation,
  UsageObservationConflictError,
  type UsageRecordResult,
  usageObservationFromText,
  usageObservationKey,
  usageObservationText,
} from "@alma-harness/core";
import { pageOfFetched } from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";

/**
 * Late usage in PostgreSQL (`usage_inbox`, migration 0005): an insert-or-nothing; when it inserted
 * nothing, a new snapshot reads the row that won (committed before, or by the concurrent insert it
 * waited on) and compares. Evidence only: no statement here touches money or the journal.
 */
export class PgUsageInbox implements UsageInbox {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async record(input: UsageObservation): Promise<UsageRecordResult> {
    const { observation: o, key } = normalizeUsageObservation(input);
    const { rows } = await this.#db.write<{ n: number }>(
      `INSERT INTO usage_inbox (scope, operation_id, source, session_id, observed_at, record) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (scope, operation_id, source) DO NOTHING RETURNING 1 AS n`,
      [key, o.operationId, o.source, o.sessionId, o.observedAt, usageObservationText(o)],
    );
    if (rows.length === 1) return Object.freeze({ status: "recorded", observation: o });
    const found = await this.#db.query<{ record: string }>(
      "SELECT record FROM usage_inbox WHERE scope = $1 AND operation_id = $2 AND source = $3",
      [key, o.operationId, o.source],
    );
    const text = found.rows[0]?.record;
    if (text === undefined) throw new UsageObservationConflictError();
    const stored = usageObservationFromText(o.scope, text);
    if (sameUsageObservation(stored, o, (scope, id) => this.#db.mark(scope, id)))
      return Object.freeze({ status: "replayed", observation: stored });
    throw new UsageObservationConflictError();
  }

  async list(scope: Scope, query?: UsageInboxQuery): Promise<UsageInboxPage> {
    const q = normalizeUsageInboxQuery(scope, query);
    const after = q.after ?? [-1, "", ""];
    const { rows } = await this.#db.query<{ record: string }>(
      `SELECT record FROM usage_inbox WHERE scope = $1 AND ($2::text IS NULL OR session_id = $2)
       AND (observed_at, operation_id, source) > ($3, $4, $5) ORDER BY observed_at, operation_id, source LIMIT $6`,
      [q.key, q.sessionId ?? null, after[0], after[1], after[2], q.limit + 1],
    );
    return pageOfFetched(
      rows.map((r) => usageObservationFromText(q.scope, r.record)),
      q.limit,
      usageObservationKey,
    );
  }
}
