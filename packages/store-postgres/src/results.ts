import { ConflictError, type ExecutionResultStore, type JsonValue, type ResultRecord, type ResultReservation, type ResultState, type ReserveResult, type Scope, validateId } from "@alma-harness/core";
import { normalizeEnvelope, normalizeReservation, oversize, putRefusal, resultView, scopeKey, validateTime } from "@alma-harness/core/testing";
import type pg from "pg";
import { decodeJson, RECORD_VERSION, run, transaction } from "./pg.js";

interface ResultRow {
  readonly result_id: string;
  readonly session_id: string;
  readonly binding: string;
  readonly sensitivity: ResultRecord["sensitivity"];
  readonly max_chars: number;
  readonly expires_at: number;
  readonly state: ResultState;
  readonly v: number;
  readonly envelope: string | null;
}

function toView(row: ResultRow, now: number): ResultRecord {
  const envelope = row.envelope === null ? undefined : decodeJson<JsonValue>(row.v, row.envelope);
  const r = { resultId: row.result_id, sessionId: row.session_id, binding: row.binding, sensitivity: row.sensitivity, expiresAt: row.expires_at };
  return resultView(r, row.state, envelope, now);
}

const BY_ID = "SELECT * FROM results WHERE scope = $1 AND result_id = $2";

/**
 * One result namespace in PostgreSQL. SQL names the table unqualified: which namespace it is
 * depends only on the pool's search_path (the main schema for step results, the root schema's own
 * pool for root results), so one instance can never reach the other's rows.
 */
export class PgResultStore implements ExecutionResultStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async reserve(reservation: ResultReservation): Promise<ReserveResult> {
    const r = normalizeReservation(reservation);
    const { key } = scopeKey(r.scope);
    const inserted = await run<ResultRow>(
      this.#pool,
      `INSERT INTO results (scope, result_id, session_id, binding, sensitivity, max_chars, expires_at, created_at, state, v)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'reserved', $9) ON CONFLICT (scope, result_id) DO NOTHING RETURNING *`,
      [key, r.resultId, r.sessionId, r.binding, r.sensitivity, r.maxChars, r.expiresAt, r.createdAt, RECORD_VERSION],
    );
    const row = inserted.rows[0];
    if (row) return Object.freeze({ status: "reserved", record: toView(row, r.createdAt) });
    const existing = (await run<ResultRow>(this.#pool, BY_ID, [key, r.resultId])).rows[0] as ResultRow;
    return Object.freeze({ status: "exists", record: toView(existing, r.createdAt) });
  }

  async put(scope: Scope, resultId: string, envelope: JsonValue, now: number): Promise<ResultRecord> {
    const { key } = scopeKey(scope);
    const id = validateId("resultId", resultId);
    const at = validateTime("now", now);
    const e = normalizeEnvelope(envelope);
    return transaction(this.#pool, async (tx) => {
      const row = (await tx.query<ResultRow>(`${BY_ID} FOR UPDATE`, [key, id])).rows[0];
      const refusal = putRefusal(id, row?.state, row?.expires_at ?? 0, at);
      if (refusal || !row) throw refusal;
      if (row.state === "stored") {
        if (row.envelope === e.text) return toView(row, at);
        throw new ConflictError("result_conflict", `result "${id}" was stored with a different envelope`);
      }
      const tooBig = oversize(e.text, row.max_chars);
      if (tooBig) throw tooBig;
      const stored = await tx.query<ResultRow>(
        "UPDATE results SET state = 'stored', envelope = $3, v = $4 WHERE scope = $1 AND result_id = $2 RETURNING *",
        [key, id, e.text, RECORD_VERSION],
      );
      return toView(stored.rows[0] as ResultRow, at);
    });
  }

  async get(scope: Scope, resultId: string, now: number): Promise<ResultRecord | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("resultId", resultId);
    const at = validateTime("now", now);
    const row = (await run<ResultRow>(this.#pool, BY_ID, [key, id])).rows[0];
    return row ? toView(row, at) : undefined;
  }

  async eraseSession(scope: Scope, sessionId: string): Promise<number> {
    const { key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const result = await run(
      this.#pool,
      "UPDATE results SET state = 'erased', envelope = NULL WHERE scope = $1 AND session_id = $2 AND state <> 'erased'",
      [key, id],
    );
    return result.rowCount ?? 0;
  }

  async purgeExpired(now: number): Promise<number> {
    const at = validateTime("now", now);
    const result = await run(this.#pool, "UPDATE results SET state = 'expired', envelope = NULL WHERE state IN ('reserved', 'stored') AND expires_at <= $1", [at]);
    return result.rowCount ?? 0;
  }
}
