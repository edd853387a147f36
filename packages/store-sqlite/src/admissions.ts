import {
  type Admission,
  type AdmissionStore,
  type AdmitResult,
  type Scope,
  type ScopeFence,
  ScopeFencedError,
  type ScopeFenceTarget,
} from "@alma-harness/core";
import {
  type AdmissionRow,
  type AdmissionTransition,
  AdmissionTransitions,
  admissionExists,
  admissionOf,
  admitted,
  busy,
  fenceKey,
  normalizeFenceInput,
  normalizeFenceTarget,
  prepareAdmit,
  prepareKeyed,
  prepareReleaseExpired,
  releasedAdmissions,
  scopeFenceFromRow,
} from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { scopeFenced } from "./spend.js";

const HOLDER =
  "SELECT * FROM admissions WHERE scope = ? AND session_id = ? AND state IN ('active', 'uncertain')";
const BY_ID = "SELECT * FROM admissions WHERE scope = ? AND admission_id = ?";

/** Admissions in SQLite: admit checks the holder and inserts under one immediate transaction. */
export class SqliteAdmissionStore extends AdmissionTransitions implements AdmissionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    super();
    this.#db = db;
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const { a, key } = prepareAdmit(input);
    return this.#db.write((): AdmitResult => {
      if (this.#db.stmt(BY_ID).get(key, a.admissionId)) {
        throw admissionExists(a.admissionId);
      }
      const holder = this.#db.stmt(HOLDER).get(key, a.sessionId) as AdmissionRow | undefined;
      if (holder) return busy(holder);
      if (scopeFenced(this.#db, key)) throw new ScopeFencedError();
      const row = this.#db
        .stmt(
          `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
           VALUES (?, ?, ?, ?, ?, 'active', ?, ?) RETURNING *`,
        )
        .get(
          key,
          a.admissionId,
          a.sessionId,
          a.rootKey,
          a.kind,
          a.now,
          a.deadlineAt,
        ) as AdmissionRow;
      return admitted(row);
    });
  }

  async get(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "admissionId", admissionId);
    return admissionOf(
      this.#db.guard(() => this.#db.stmt(BY_ID).get(key, id) as AdmissionRow | undefined),
    );
  }

  async holder(scope: Scope, sessionId: string): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "sessionId", sessionId);
    return admissionOf(
      this.#db.guard(() => this.#db.stmt(HOLDER).get(key, id) as AdmissionRow | undefined),
    );
  }

  async releaseExpired(
    input: Parameters<AdmissionStore["releaseExpired"]>[0],
  ): Promise<readonly Admission[]> {
    const r = prepareReleaseExpired(input);
    const sql = `UPDATE admissions SET state = 'released', release_reason = 'expired'
      WHERE state IN ('active', 'uncertain') AND deadline_at + ? <= ? AND (? IS NULL OR scope = ?)
      AND (? IS NULL OR session_id = ?) AND (? IS NULL OR kind = ?) RETURNING *`;
    const params = [r.graceMs, r.now, r.only, r.only, r.sessionId, r.sessionId, r.kind, r.kind];
    const rows = this.#db.durable(() => this.#db.stmt(sql).all(...params) as AdmissionRow[]);
    return releasedAdmissions(rows);
  }

  async fenceScope(input: Parameters<AdmissionStore["fenceScope"]>[0]): Promise<ScopeFence> {
    const f = normalizeFenceInput(input);
    const target = fenceKey(f.target);
    // A durability point: once it returns the fence survives a crash. SQLite's one writer means no
    // fenced write is in flight beside it: each one checks the fence in its own transaction.
    const row = this.#db.durable(() => {
      this.#db
        .stmt(
          "INSERT INTO scope_fences (target, org, reason, fenced_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .run(target, f.target.org, f.reason, f.now);
      return this.#db.stmt("SELECT * FROM scope_fences WHERE target = ?").get(target) as FenceRow;
    });
    return scopeFenceFromRow(row);
  }

  async liftScopeFence(target: ScopeFenceTarget): Promise<boolean> {
    const key = fenceKey(normalizeFenceTarget(target));
    return this.#db.durable(
      () => this.#db.stmt("DELETE FROM scope_fences WHERE target = ?").run(key).changes > 0,
    );
  }

  async scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]> {
    const t = normalizeFenceTarget(target);
    const rows = this.#db.guard(() =>
      t.uid === undefined
        ? (this.#db
            .stmt("SELECT * FROM scope_fences WHERE org = ? ORDER BY target")
            .all(t.org) as FenceRow[])
        : (this.#db
            .stmt("SELECT * FROM scope_fences WHERE target IN (?, ?) ORDER BY target")
            .all(fenceKey({ org: t.org }), fenceKey(t)) as FenceRow[]),
    );
    return Object.freeze(rows.map(scopeFenceFromRow));
  }

  /** A conditional update; when it matches nothing, the current record (or undefined) is read back in the same transaction. */
  protected async transition(
    scope: Scope,
    admissionId: string,
    { from, set }: AdmissionTransition,
  ): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "admissionId", admissionId);
    const sql = `UPDATE admissions SET ${set} WHERE scope = ? AND admission_id = ? AND ${from} RETURNING *`;
    // Every transition ends (or marks) a turn's hold on the session: a durability point.
    return admissionOf(
      this.#db.durable(
        () =>
          (this.#db.stmt(sql).get(key, id) ?? this.#db.stmt(BY_ID).get(key, id)) as
            | AdmissionRow
            | undefined,
      ),
    );
  }
}

interface FenceRow {
  readonly target: string;
  readonly reason: string;
  readonly fenced_at: number;
}
