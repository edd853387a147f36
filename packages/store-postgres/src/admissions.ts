import { type Admission, type AdmissionStore, type AdmitResult, type Scope, StoreUnavailableError } from "@alma-harness/core";
import { type AdmissionRow, type AdmissionTransition, AdmissionTransitions, admissionExists, admissionOf, admitted, busy, prepareAdmit, prepareKeyed, prepareReleaseExpired, releasedAdmissions } from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./db.js";

const BY_ID = "SELECT * FROM admissions WHERE scope = $1 AND admission_id = $2";
const HOLDER = "SELECT * FROM admissions WHERE scope = $1 AND session_id = $2 AND state IN ('active', 'uncertain')";

/**
 * Admissions in PostgreSQL. The partial unique index on (scope, session_id) for holding states is
 * what admits exactly one: an insert that meets a holder (committed or in flight) does nothing.
 */
export class PgAdmissionStore extends AdmissionTransitions implements AdmissionStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    super();
    this.#db = asConn(pool);
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const { a, key } = prepareAdmit(input);
    // Insert-or-nothing, then read why: a holder that ends in between makes the reads miss, so retry.
    for (let attempt = 0; attempt < 8; attempt++) {
      const inserted = await this.#db.write<AdmissionRow>(
        `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
         VALUES ($1, $2, $3, $4, $5, 'active', $6, $7) ON CONFLICT DO NOTHING RETURNING *`,
        [key, a.admissionId, a.sessionId, a.rootKey, a.kind, a.now, a.deadlineAt],
      );
      const row = inserted.rows[0];
      if (row) return admitted(row);
      if ((await this.#db.query(BY_ID, [key, a.admissionId])).rows[0]) {
        throw admissionExists(a.admissionId);
      }
      const holder = (await this.#db.query<AdmissionRow>(HOLDER, [key, a.sessionId])).rows[0];
      if (holder) return busy(holder);
    }
    throw new StoreUnavailableError("the session's holder kept changing; try again");
  }

  async get(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "admissionId", admissionId);
    return admissionOf((await this.#db.query<AdmissionRow>(BY_ID, [key, id])).rows[0]);
  }

  async holder(scope: Scope, sessionId: string): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    return admissionOf((await this.#db.query<AdmissionRow>(HOLDER, [key, id])).rows[0]);
  }

  async releaseExpired(input: Parameters<AdmissionStore["releaseExpired"]>[0]): Promise<readonly Admission[]> {
    const r = prepareReleaseExpired(input);
    // A durability point, like every end of an admission.
    const { rows } = await this.#db.write<AdmissionRow>(
      `UPDATE admissions SET state = 'released', release_reason = 'expired'
       WHERE state IN ('active', 'uncertain') AND deadline_at + $1 <= $2 AND ($3::text IS NULL OR scope = $3) RETURNING *`,
      [r.graceMs, r.now, r.only],
      { durable: true },
    );
    return releasedAdmissions(rows);
  }

  /**
   * A conditional update (the row lock makes it wait for an append holding the admission); when it
   * matches nothing, the record as it is now is read back.
   */
  protected async transition(scope: Scope, admissionId: string, { from, set }: AdmissionTransition): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "admissionId", admissionId);
    // A durability point: the admission's end commits the unit's writes with it.
    const updated = await this.#db.write<AdmissionRow>(`UPDATE admissions SET ${set} WHERE scope = $1 AND admission_id = $2 AND ${from} RETURNING *`, [key, id], {
      durable: true,
    });
    return admissionOf(updated.rows[0] ?? (await this.#db.query<AdmissionRow>(BY_ID, [key, id])).rows[0]);
  }
}
