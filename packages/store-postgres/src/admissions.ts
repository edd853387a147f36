import {
  type Admission,
  type AdmissionStore,
  type AdmitResult,
  type Scope,
  type ScopeFence,
  ScopeFencedError,
  type ScopeFenceTarget,
  StoreUnavailableError,
} from "@alma-harness/core";
import {
  type AdmissionRow,
  type AdmissionTransition,
  AdmissionTransitions,
  admissionExists,
  admissionOf,
  admitted,
  busy,
  coveringFenceKeys,
  fenceKey,
  normalizeFenceInput,
  normalizeFenceTarget,
  prepareAdmit,
  prepareKeyed,
  prepareReleaseExpired,
  releasedAdmissions,
  scopeFenceFromRow,
} from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { fenceLock, scopeFencedIn } from "./fences.js";

const BY_ID = "SELECT * FROM admissions WHERE scope = $1 AND admission_id = $2";
const HOLDER =
  "SELECT * FROM admissions WHERE scope = $1 AND session_id = $2 AND state IN ('active', 'uncertain')";

/**
 * Admissions in PostgreSQL. The partial unique index on (scope, session_id) for holding states is
 * what admits exactly one: an insert that meets a holder (committed or in flight) does nothing.
 */
export class PgAdmissionStore extends AdmissionTransitions implements AdmissionStore {
  readonly #db: Conn;
  readonly #schema: string;

  /** `schema` namespaces the fence lock keys (advisory locks are database-wide). */
  constructor(pool: pg.Pool | Conn, schema = "public") {
    super();
    this.#db = asConn(pool);
    this.#schema = schema;
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const { a, key } = prepareAdmit(input);
    // Insert-or-nothing, then read why: a holder that ends in between makes the reads miss, so retry.
    for (let attempt = 0; attempt < 8; attempt++) {
      // A fenced scope inserts nothing; a holder is looked for first below, so it still answers busy.
      const inserted = await this.#db.transaction(
        (tx) =>
          tx.query<AdmissionRow>(
            `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
             SELECT $1, $2, $3, $4, $5, 'active', $6, $7 WHERE NOT EXISTS (SELECT 1 FROM scope_fences WHERE target IN ($8, $9))
             ON CONFLICT DO NOTHING RETURNING *`,
            [
              key,
              a.admissionId,
              a.sessionId,
              a.rootKey,
              a.kind,
              a.now,
              a.deadlineAt,
              ...coveringFenceKeys(key),
            ],
          ),
        // One conditional insert: it refuses by inserting nothing. Inserted, it read no fence under
        // the fence lock, which its unit holds to the commit.
        {
          locks: fenceLock(this.#schema, a.scope.org, "shared"),
          undo: false,
          stood: (out) => {
            if (out.rows[0]) this.#db.noteUnfenced(key);
          },
        },
      );
      const row = inserted.rows[0];
      if (row) return admitted(row);
      if ((await this.#db.query(BY_ID, [key, a.admissionId])).rows[0]) {
        throw admissionExists(a.admissionId);
      }
      const holder = (await this.#db.query<AdmissionRow>(HOLDER, [key, a.sessionId])).rows[0];
      if (holder) return busy(holder);
      if (await scopeFencedIn(this.#db, key)) throw new ScopeFencedError();
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

  async releaseExpired(
    input: Parameters<AdmissionStore["releaseExpired"]>[0],
  ): Promise<readonly Admission[]> {
    const r = prepareReleaseExpired(input);
    // A durability point, like every end of an admission.
    const { rows } = await this.#db.write<AdmissionRow>(
      `UPDATE admissions SET state = 'released', release_reason = 'expired'
       WHERE state IN ('active', 'uncertain') AND deadline_at + $1 <= $2 AND ($3::text IS NULL OR scope = $3)
         AND ($4::text IS NULL OR session_id = $4) AND ($5::text IS NULL OR kind = $5) RETURNING *`,
      [r.graceMs, r.now, r.only, r.sessionId, r.kind],
      { durable: true },
    );
    return releasedAdmissions(rows);
  }

  /**
   * Inserts the fence (or keeps the one there), then locks every holding admission it covers
   * `FOR UPDATE`: that waits for each fenced write in flight (which holds its admission `FOR SHARE`
   * until it commits), and a write that waits behind this lock reads the fence once it commits. So
   * when this returns, every write of a covered admission either committed before or is refused.
   */
  async fenceScope(input: Parameters<AdmissionStore["fenceScope"]>[0]): Promise<ScopeFence> {
    const f = normalizeFenceInput(input);
    const target = fenceKey(f.target);
    const covered = f.target.uid === undefined ? "scope LIKE $1 || '/%'" : "scope = $1";
    const scopeArg =
      f.target.uid === undefined
        ? f.target.org.replace(/[\\%_]/g, "\\$&")
        : `${f.target.org}/${f.target.uid}`;
    return this.#db.transaction(
      async (tx) => {
        await tx.query(fenceLock(this.#schema, f.target.org, "exclusive"));
        await tx.query(
          "INSERT INTO scope_fences (target, org, reason, fenced_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
          [target, f.target.org, f.reason, f.now],
        );
        await tx.query(
          `SELECT admission_id FROM admissions WHERE state IN ('active', 'uncertain') AND ${covered} ORDER BY scope, admission_id FOR UPDATE`,
          [scopeArg],
        );
        const { rows } = await tx.query<FenceRow>("SELECT * FROM scope_fences WHERE target = $1", [
          target,
        ]);
        return scopeFenceFromRow(rows[0] as FenceRow);
      },
      { durable: true },
    );
  }

  async liftScopeFence(target: ScopeFenceTarget): Promise<boolean> {
    const key = fenceKey(normalizeFenceTarget(target));
    const { rowCount } = await this.#db.write("DELETE FROM scope_fences WHERE target = $1", [key], {
      durable: true,
    });
    return (rowCount ?? 0) > 0;
  }

  async scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]> {
    const t = normalizeFenceTarget(target);
    const { rows } =
      t.uid === undefined
        ? await this.#db.query<FenceRow>(
            "SELECT * FROM scope_fences WHERE org = $1 ORDER BY target",
            [t.org],
          )
        : await this.#db.query<FenceRow>(
            "SELECT * FROM scope_fences WHERE target IN ($1, $2) ORDER BY target",
            [fenceKey({ org: t.org }), fenceKey(t)],
          );
    return Object.freeze(rows.map(scopeFenceFromRow));
  }

  /**
   * A conditional update (the row lock makes it wait for an append holding the admission); when it
   * matches nothing, the record as it is now is read back.
   */
  protected async transition(
    scope: Scope,
    admissionId: string,
    { from, set }: AdmissionTransition,
  ): Promise<Admission | undefined> {
    const { key, id } = prepareKeyed(scope, "admissionId", admissionId);
    // A durability point: the admission's end commits the unit's writes with it.
    const updated = await this.#db.write<AdmissionRow>(
      `UPDATE admissions SET ${set} WHERE scope = $1 AND admission_id = $2 AND ${from} RETURNING *`,
      [key, id],
      {
        durable: true,
      },
    );
    return admissionOf(
      updated.rows[0] ?? (await this.#db.query<AdmissionRow>(BY_ID, [key, id])).rows[0],
    );
  }
}

interface FenceRow {
  readonly target: string;
  readonly reason: string;
  readonly fenced_at: string;
}
