import { type Admission, type AdmissionStore, type AdmitResult, ConflictError, type Scope, StoreUnavailableError, validateId } from "@alma-harness/core";
import { type AdmissionRow, admissionFromRow, normalizeAdmit, normalizeReleaseExpired, scopeKey } from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./db.js";

const BY_ID = "SELECT * FROM admissions WHERE scope = $1 AND admission_id = $2";
const HOLDER = "SELECT * FROM admissions WHERE scope = $1 AND session_id = $2 AND state IN ('active', 'uncertain')";

/**
 * Admissions in PostgreSQL. The partial unique index on (scope, session_id) for holding states is
 * what admits exactly one: an insert that meets a holder (committed or in flight) does nothing.
 */
export class PgAdmissionStore implements AdmissionStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const a = normalizeAdmit(input);
    const { key } = scopeKey(a.scope);
    // Insert-or-nothing, then read why: a holder that ends in between makes the reads miss, so retry.
    for (let attempt = 0; attempt < 8; attempt++) {
      const inserted = await this.#db.write<AdmissionRow>(
        `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
         VALUES ($1, $2, $3, $4, $5, 'active', $6, $7) ON CONFLICT DO NOTHING RETURNING *`,
        [key, a.admissionId, a.sessionId, a.rootKey, a.kind, a.now, a.deadlineAt],
      );
      const row = inserted.rows[0];
      if (row) return Object.freeze({ status: "admitted", admission: admissionFromRow(row) });
      if ((await this.#db.query(BY_ID, [key, a.admissionId])).rows[0]) {
        throw new ConflictError("admission_exists", `admission "${a.admissionId}" already exists`);
      }
      const holder = (await this.#db.query<AdmissionRow>(HOLDER, [key, a.sessionId])).rows[0];
      if (holder) return Object.freeze({ status: "busy", holder: admissionFromRow(holder) });
    }
    throw new StoreUnavailableError("the session's holder kept changing; try again");
  }

  async get(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    const row = (await this.#db.query<AdmissionRow>(BY_ID, [key, validateId("admissionId", admissionId)])).rows[0];
    return row ? admissionFromRow(row) : undefined;
  }

  async holder(scope: Scope, sessionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    const row = (await this.#db.query<AdmissionRow>(HOLDER, [key, validateId("sessionId", sessionId)])).rows[0];
    return row ? admissionFromRow(row) : undefined;
  }

  async markUncertain(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, "state = 'active'", "state = 'uncertain'");
  }

  async finish(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, "state = 'active'", "state = 'finished'");
  }

  async releaseFailed(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, "state IN ('active', 'uncertain')", "state = 'released', release_reason = 'failed'");
  }

  async releaseExpired(input: Parameters<AdmissionStore["releaseExpired"]>[0]): Promise<readonly Admission[]> {
    const r = normalizeReleaseExpired(input);
    const only = r.scope === undefined ? null : scopeKey(r.scope).key;
    // A durability point, like every end of an admission.
    const { rows } = await this.#db.write<AdmissionRow>(
      `UPDATE admissions SET state = 'released', release_reason = 'expired'
       WHERE state IN ('active', 'uncertain') AND deadline_at + $1 <= $2 AND ($3::text IS NULL OR scope = $3) RETURNING *`,
      [r.graceMs, r.now, only],
      { durable: true },
    );
    const out = rows.map(admissionFromRow).sort((a, b) => a.deadlineAt - b.deadlineAt || (a.admissionId < b.admissionId ? -1 : 1));
    return Object.freeze(out);
  }

  /**
   * A conditional update (the row lock makes it wait for an append holding the admission); when it
   * matches nothing, the record as it is now is read back.
   */
  async #transition(scope: Scope, admissionId: string, from: string, set: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("admissionId", admissionId);
    // A durability point: the admission's end commits the unit's writes with it.
    const updated = await this.#db.write<AdmissionRow>(`UPDATE admissions SET ${set} WHERE scope = $1 AND admission_id = $2 AND ${from} RETURNING *`, [key, id], {
      durable: true,
    });
    const row = updated.rows[0] ?? (await this.#db.query<AdmissionRow>(BY_ID, [key, id])).rows[0];
    return row ? admissionFromRow(row) : undefined;
  }
}
