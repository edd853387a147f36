import type {
  ExecutionResultStore,
  JsonValue,
  ResultRecord,
  ResultReservation,
  ReserveResult,
  Scope,
} from "@alma-harness/core";
import {
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
import type { SqliteDb } from "./db.js";
import { eraseResultRows } from "./erasure.js";
import { checkFence } from "./spend.js";

/**
 * One result namespace in SQLite: `main.results` for step results, and for conversation roots
 * `main.root_results` (their own table set in the main file) or `root.results` (the attached
 * root-results file). Each instance only ever names its own table.
 *
 * Attached, a transaction that writes both files is atomic per file only (WAL), so with grouped
 * commits a root write never shares one: what is pending in the main file is committed first, and
 * the root write commits on its own. A crash between the two leaves the main file ahead (the turn
 * reads as uncertain), never a stored final result without the writes it reports.
 */
export class SqliteResultStore implements ExecutionResultStore {
  readonly #db: SqliteDb;
  readonly #table: string;
  /** Whether this namespace is another file than the main one (root results, attached). */
  readonly #apart: boolean;

  constructor(db: SqliteDb, namespace: "main" | "root") {
    this.#db = db;
    this.#table = namespace === "main" ? "main.results" : db.root.table;
    this.#apart = namespace === "root" && db.root.mode === "attached";
  }

  /** A write of this namespace: alone in its transaction when the namespace is another file. */
  #write<T>(fn: () => T): T {
    if (!this.#apart) return this.#db.write(fn);
    this.#db.commit();
    return this.#db.durable(fn);
  }

  async reserve(reservation: ResultReservation): Promise<ReserveResult> {
    const { r, key } = prepareReserve(reservation);
    return this.#write((): ReserveResult => {
      const existing = this.#row(key, r.resultId);
      if (existing) return reserveResult("exists", existing, r.createdAt);
      const row = this.#db
        .stmt(
          `INSERT INTO ${this.#table} (scope, result_id, session_id, binding, sensitivity, max_chars, expires_at, created_at, state, v)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'reserved', ?) RETURNING *`,
        )
        .get(
          key,
          r.resultId,
          r.sessionId,
          r.binding,
          r.sensitivity,
          r.maxChars,
          r.expiresAt,
          r.createdAt,
          RECORD_VERSION,
        ) as ResultRow;
      return reserveResult("reserved", row, r.createdAt);
    });
  }

  async put(
    scope: Scope,
    resultId: string,
    envelope: JsonValue,
    now: number,
    opts?: { readonly admissionId?: string },
  ): Promise<ResultRecord> {
    const { key, id, at, admissionId, text } = preparePut(scope, resultId, envelope, now, opts);
    return this.#write(() => {
      const row = this.#row(key, id);
      // The fence and the write share the transaction (the admissions live in the main file).
      if (admissionId !== undefined && row)
        checkFence(this.#db, key, admissionId, row.session_id, at);
      const done = putOutcome(id, row, text, at);
      if (done) return done;
      const stored = this.#db
        .stmt(
          `UPDATE ${this.#table} SET state = 'stored', envelope = ?, v = ? WHERE scope = ? AND result_id = ? RETURNING *`,
        )
        .get(text, RECORD_VERSION, key, id) as ResultRow;
      return resultFromRow(stored, at);
    });
  }

  async get(scope: Scope, resultId: string, now: number): Promise<ResultRecord | undefined> {
    const { key, id, at } = prepareResultGet(scope, resultId, now);
    const row = this.#db.guard(() => this.#row(key, id));
    return row ? resultFromRow(row, at) : undefined;
  }

  async eraseSession(scope: Scope, sessionId: string): Promise<number> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    if (this.#apart) this.#db.commit();
    return this.#db.durable(() =>
      eraseResultRows(this.#db, this.#table, key, { id, mark: this.#db.mark(scope, id) }),
    );
  }

  async purgeExpired(now: number): Promise<number> {
    const at = validateTime("now", now);
    const sql = `UPDATE ${this.#table} SET state = 'expired', envelope = NULL WHERE state IN ('reserved', 'stored') AND expires_at <= ?`;
    if (this.#apart) this.#db.commit();
    return this.#db.durable(() => this.#db.stmt(sql).run(at).changes);
  }

  #row(key: string, resultId: string): ResultRow | undefined {
    return this.#db
      .stmt(`SELECT * FROM ${this.#table} WHERE scope = ? AND result_id = ?`)
      .get(key, resultId) as ResultRow | undefined;
  }
}
