import { type Admission, type AdmissionStore, type AdmitResult, ConflictError, type Scope, validateId } from "@alma-harness/core";
import { type AdmissionRow, admissionFromRow, normalizeAdmit, normalizeReleaseExpired, scopeKey } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";

const HOLDER = "SELECT * FROM admissions WHERE scope = ? AND session_id = ? AND state IN ('active', 'uncertain')";
const BY_ID = "SELECT * FROM admissions WHERE scope = ? AND admission_id = ?";

/** Admissions in SQLite: admit checks the holder and inserts under one immediate transaction. */
export class SqliteAdmissionStore implements AdmissionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const a = normalizeAdmit(input);
    const { key } = scopeKey(a.scope);
    return this.#db.write((): AdmitResult => {
      if (this.#db.stmt(BY_ID).get(key, a.admissionId)) {
        throw new ConflictError("admission_exists", `admission "${a.admissionId}" already exists`);
      }
      const holder = this.#db.stmt(HOLDER).get(key, a.sessionId) as AdmissionRow | undefined;
      if (holder) return Object.freeze({ status: "busy", holder: admissionFromRow(holder) });
      const row = this.#db
        .stmt(
          `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
           VALUES (?, ?, ?, ?, ?, 'active', ?, ?) RETURNING *`,
        )
        .get(key, a.admissionId, a.sessionId, a.rootKey, a.kind, a.now, a.deadlineAt) as AdmissionRow;
      return Object.freeze({ status: "admitted", admission: admissionFromRow(row) });
    });
  }

  async get(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("admissionId", admissionId);
    const row = this.#db.guard(() => this.#db.stmt(BY_ID).get(key, id) as AdmissionRow | undefined);
    return row ? admissionFromRow(row) : undefined;
  }

  async holder(scope: Scope, sessionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    const session = validateId("sessionId", sessionId);
    const row = this.#db.guard(() => this.#db.stmt(HOLDER).get(key, session) as AdmissionRow | undefined);
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
    const only = r.scope === undefined ? undefined : scopeKey(r.scope).key;
    const sql = `UPDATE admissions SET state = 'released', release_reason = 'expired'
      WHERE state IN ('active', 'uncertain') AND deadline_at + ? <= ? ${only === undefined ? "" : "AND scope = ?"} RETURNING *`;
    const params = only === undefined ? [r.graceMs, r.now] : [r.graceMs, r.now, only];
    const rows = this.#db.durable(() => this.#db.stmt(sql).all(...params) as AdmissionRow[]);
    const out = rows.map(admissionFromRow).sort((a, b) => a.deadlineAt - b.deadlineAt || (a.admissionId < b.admissionId ? -1 : 1));
    return Object.freeze(out);
  }

  /** A conditional update; when it matches nothing, the current record (or undefined) is read back in the same transaction. */
  #transition(scope: Scope, admissionId: string, from: string, set: string): Admission | undefined {
    const { key } = scopeKey(scope);
    const id = validateId("admissionId", admissionId);
    const sql = `UPDATE admissions SET ${set} WHERE scope = ? AND admission_id = ? AND ${from} RETURNING *`;
    // Every transition ends (or marks) a turn's hold on the session: a durability point.
    const row = this.#db.durable(
      () => (this.#db.stmt(sql).get(key, id) ?? this.#db.stmt(BY_ID).get(key, id)) as AdmissionRow | undefined,
    );
    return row ? admissionFromRow(row) : undefined;
  }
}
