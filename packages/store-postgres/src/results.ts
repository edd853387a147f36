import type {
  Admission,
  ExecutionResultStore,
  JsonValue,
  ResultRecord,
  ResultReservation,
  ReserveResult,
  Scope,
} from "@alma-harness/core";
import {
  fenceRefusal,
  prepareKeyed,
  preparePut,
  prepareReserve,
  prepareResultGet,
  putOutcome,
  RECORD_VERSION,
  type ResultRow,
  reserveResult,
  resultFromRow,
  validateTime,
} from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { thenFenced } from "./fences.js";
import { lockedThen, type Statement } from "./pg.js";
import { eraseResultRows } from "./erasure.js";
import { validateSchema } from "./pg.js";

/** A put's read: the result row, and with an admission id, what the fence needs of that admission. */
interface PutRow extends ResultRow {
  readonly fence_state?: Admission["state"] | null;
  readonly fence_session_id?: string | null;
  readonly fence_deadline_at?: number | null;
}

/**
 * One result namespace in PostgreSQL. SQL names the results table unqualified: which namespace it
 * is depends only on the pool's search_path (the main schema for step results, the root schema's
 * own pool for root results), so one instance can never reach the other's rows. The one name it
 * qualifies is the main schema's `admissions` table, which a fenced `put` reads `FOR SHARE` in its
 * own transaction: both schemas are in one database, so the root pool's transaction can hold the
 * admission while it writes the final result.
 */
export class PgResultStore implements ExecutionResultStore {
  readonly #db: Conn;
  readonly #table: string;
  readonly #byId: string;
  readonly #fencedRead: string;
  readonly #schema: string;

  /**
   * `schema`: the main schema, whose `admissions` table fences a put that names an admission;
   * `resultsSchema`: the schema of this namespace's `results` table (default: the pool's
   * search_path). Named, it lets the root namespace's writes run on a unit's main-pool client.
   */
  constructor(pool: pg.Pool | Conn, schema: string, resultsSchema?: string) {
    this.#db = asConn(pool);
    this.#schema = validateSchema(schema);
    this.#table =
      resultsSchema === undefined
        ? "results"
        : `${validateSchema(resultsSchema, "resultsSchema")}.results`;
    this.#byId = `SELECT * FROM ${this.#table} WHERE scope = $1 AND result_id = $2`;
    // Held until commit: the admission cannot end (finish, mark uncertain, release) under the write.
    this.#fencedRead = `WITH fence AS MATERIALIZED (
        SELECT state AS fence_state, session_id AS fence_session_id, deadline_at AS fence_deadline_at
        FROM ${validateSchema(schema)}.admissions WHERE scope = $1 AND admission_id = $3 FOR SHARE)
      SELECT r.*, fence.* FROM ${this.#table} r LEFT JOIN fence ON true WHERE r.scope = $1 AND r.result_id = $2 FOR UPDATE OF r`;
  }

  async reserve(reservation: ResultReservation): Promise<ReserveResult> {
    const { r, key } = prepareReserve(reservation);
    const inserted = await this.#db.write<ResultRow>(
      `INSERT INTO ${this.#table} (scope, result_id, session_id, binding, sensitivity, max_chars, expires_at, created_at, state, v)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'reserved', $9) ON CONFLICT (scope, result_id) DO NOTHING RETURNING *`,
      [
        key,
        r.resultId,
        r.sessionId,
        r.binding,
        r.sensitivity,
        r.maxChars,
        r.expiresAt,
        r.createdAt,
        RECORD_VERSION,
      ],
    );
    const row = inserted.rows[0];
    if (row) return reserveResult("reserved", row, r.createdAt);
    const existing = (await this.#db.query<ResultRow>(this.#byId, [key, r.resultId]))
      .rows[0] as ResultRow;
    return reserveResult("exists", existing, r.createdAt);
  }

  async put(
    scope: Scope,
    resultId: string,
    envelope: JsonValue,
    now: number,
    opts?: { readonly admissionId?: string },
  ): Promise<ResultRecord> {
    const { key, id, at, admissionId, text } = preparePut(scope, resultId, envelope, now, opts);
    // The store itself goes in the read's round trip, after it: it writes only a reserved row, and a
    // refusal below throws, which takes it back (the transaction, or its savepoint in a unit).
    const store: Statement = [
      `UPDATE ${this.#table} SET state = 'stored', envelope = $3, v = $4 WHERE scope = $1 AND result_id = $2 AND state = 'reserved' RETURNING *`,
      [key, id, text, RECORD_VERSION],
    ];
    return this.#db.transaction(async (tx) => {
      // With an admission: its lock, then the scope fence in a statement of its own, one round trip.
      const read =
        admissionId === undefined
          ? await lockedThen<PutRow>(tx, `${this.#byId} FOR UPDATE`, [key, id], store)
          : await thenFenced<PutRow>(
              tx,
              this.#fencedRead,
              [key, id, admissionId],
              key,
              this.#schema,
              [store],
            );
      const row = read.rows[0];
      // The fence first (as the reference store): a stale owner learns it is fenced, whatever the result's state.
      if (row && admissionId !== undefined) {
        const admission =
          row.fence_state == null
            ? undefined
            : {
                state: row.fence_state,
                sessionId: row.fence_session_id as string,
                deadlineAt: row.fence_deadline_at as number,
              };
        const refused = fenceRefusal(
          admission,
          row.session_id,
          at,
          admission !== undefined && read.fenced,
        );
        if (refused) throw refused;
      }
      const done = putOutcome(id, row, text, at);
      if (done) return done;
      return resultFromRow(read.after[0]?.rows[0] as ResultRow, at);
    });
  }

  async get(scope: Scope, resultId: string, now: number): Promise<ResultRecord | undefined> {
    const { key, id, at } = prepareResultGet(scope, resultId, now);
    const row = (await this.#db.query<ResultRow>(this.#byId, [key, id])).rows[0];
    return row ? resultFromRow(row, at) : undefined;
  }

  async eraseSession(scope: Scope, sessionId: string): Promise<number> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    // An erasure is a durability point.
    return this.#db.transaction(
      (tx) => eraseResultRows(tx, this.#table, key, { id, mark: this.#db.mark(scope, id) }),
      { durable: true },
    );
  }

  async purgeExpired(now: number): Promise<number> {
    const at = validateTime("now", now);
    const result = await this.#db.write(
      `UPDATE ${this.#table} SET state = 'expired', envelope = NULL WHERE state IN ('reserved', 'stored') AND expires_at <= $1`,
      [at],
      {
        durable: true,
      },
    );
    return result.rowCount ?? 0;
  }
}
