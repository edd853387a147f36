import {
  type ClaimOptions,
  type ClaimResult,
  type ExecutionClaim,
  type ExecutionRecord,
  type ExecutionStore,
  type Fence,
  type Scope,
  StaleFenceError,
} from "@alma-harness/core";
import {
  claimedResult,
  coveringFenceKeys,
  EXPIRED_EVIDENCE_COLUMN,
  type ExecutionChangeColumns,
  type ExecutionRow,
  type ExecutionStep,
  executionFromRow,
  executionOf,
  executionPage,
  existingClaim,
  FencedJournal,
  fenceRefusal,
  prepareClaim,
  prepareExecutionList,
  prepareKeyed,
  prepareReconcile,
  prepareStep,
  RECORD_VERSION,
  reconciledRecords,
  reservationRefusal,
  scopeFenceRefusal,
  staleStep,
} from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { fenceLock, scopeFencedIn, thenFenced } from "./fences.js";
import { type Queryable, RolledBack, spendLocks } from "./pg.js";

import {
  BY_ID,
  CLAIM_SQL,
  type ClaimRow,
  DISPATCH,
  KNOWN_STEP,
  STEP,
  STEP_RELEASING,
} from "./execution-sql.js";

/**
 * The execution journal in PostgreSQL. A claim is an insert-or-nothing on the primary key, so one
 * caller gets the fence; every transition is one conditional UPDATE on (fence token, state), so a
 * fence the sweep superseded matches no row and writes nothing. A claim that holds money first takes
 * the transaction advisory locks of its tenant-day and then of its session (always that order), so
 * reservers of one key are serialized across every pool and process on the database.
 */
export class PgExecutionStore extends FencedJournal implements ExecutionStore {
  readonly #db: Conn;
  readonly #schema: string;

  /** `schema` namespaces the reservation lock keys (they are database-wide). */
  constructor(pool: pg.Pool | Conn, schema: string) {
    super();
    this.#db = asConn(pool);
    this.#schema = schema;
  }

  /**
   * Without options: one statement. With an admission or a reservation: one transaction of three
   * (four for a new claim fenced by an admission: the scope fence's own read, see `scopeFencedIn`)
   * round trips, `BEGIN` (plus the tenant's fence lock, shared, and with a reservation the two
   * reservation locks, in the same simple-protocol string), the claim statement, then `COMMIT` or `ROLLBACK`. The claim statement inserts the claim
   * (or returns the one already there), reads the admission `FOR SHARE`, reads what is settled and
   * held, and inserts the reservation; the checks then run here, in the contract's order (retry,
   * fence, reservation), with core's rules, and a refusal rolls everything back.
   */
  async claim(claim: ExecutionClaim, opts?: ClaimOptions): Promise<ClaimResult> {
    const { c, o, key, text } = prepareClaim(claim, opts);
    const values: unknown[] = [
      key,
      c.operationId,
      c.sessionId,
      c.turnId,
      text,
      c.createdAt,
      c.deadlineAt,
      RECORD_VERSION,
    ];
    if (o.admissionId !== undefined) values.push(o.admissionId);
    const r = o.reservation;
    if (r !== undefined) values.push(c.scope.org, r.day, r.usdMicros, r.expiresAt);
    const sql =
      o.admissionId === undefined
        ? r === undefined
          ? CLAIM_SQL.plain
          : CLAIM_SQL.reserving
        : r === undefined
          ? CLAIM_SQL.fenced
          : CLAIM_SQL.both;
    if (o.admissionId === undefined && r === undefined) {
      const row =
        (await this.#db.write<ClaimRow>(sql, values)).rows[0] ??
        (await this.#reread(key, c.operationId));
      const result = this.#settleClaim(c, text, row, o);
      // Only a reservation refuses by rolling back, and this claim has none.
      return result instanceof RolledBack ? result.value : result;
    }
    return this.#db.transaction(
      async (tx) => {
        // With an admission: the scope fence in its own statement after the claim's FOR SHARE on
        // it (see `scopeFencedIn`), in the same round trip.
        const claimed =
          o.admissionId === undefined
            ? { rows: (await tx.query<ClaimRow>(sql, values)).rows, fenced: false }
            : await thenFenced<ClaimRow>(
                tx,
                sql,
                values,
                key,
                undefined,
                [],
                this.#db.knownUnfenced(key),
              );
        const row = claimed.rows[0] ?? (await this.#reread(key, c.operationId, tx));
        const fenced = row.inserted && claimed.fenced;
        return this.#settleClaim(c, text, row, o, fenced);
      },
      // The fence lock first (see `fenceLock`), then the reservation's: the one order every writer
      // takes. A reservation reads the counters, so a unit's late counter updates go first.
      {
        ...(r === undefined ? {} : { reads: "spend" as const }),
        locks: [
          fenceLock(this.#schema, c.scope.org, "shared"),
          ...(r === undefined
            ? []
            : [spendLocks(this.#schema, c.scope.org, r.day, key, c.sessionId)]),
        ].join("; "),
        // Claimed under the fence lock, which its unit holds to the commit, and no fence read.
        stood: (out) => {
          if (out.status === "claimed" && o.admissionId !== undefined) this.#db.noteUnfenced(key);
        },
      },
    );
  }

  /**
   * A claim that met a concurrent insert of its key: the insert waited for it, and it committed
   * after this statement's snapshot, so it is read again in a new one.
   */
  async #reread(key: string, operationId: string, tx?: Queryable): Promise<ClaimRow> {
    // Inside a transaction the raw error goes to `transaction`, which maps it (and retries a deadlock).
    const existing = (
      tx
        ? await tx.query<ExecutionRow>(BY_ID, [key, operationId])
        : await this.#db.query<ExecutionRow>(BY_ID, [key, operationId])
    ).rows[0];
    if (!existing) throw new StaleFenceError("the operation vanished while claiming");
    return { ...existing, inserted: false };
  }

  /** The contract's checks, in its order, on what the claim statement read. */
  #settleClaim(
    c: ExecutionClaim,
    text: string,
    row: ClaimRow,
    o: ClaimOptions,
    scopeFenced = false,
  ): ClaimResult | RolledBack<ClaimResult> {
    if (!row.inserted) return existingClaim(row, c, text);
    if (o.admissionId !== undefined) {
      const admission =
        row.fence_state == null
          ? undefined
          : {
              state: row.fence_state,
              sessionId: row.fence_session_id as string,
              deadlineAt: row.fence_deadline_at as number,
            };
      const refused = fenceRefusal(admission, c.sessionId, c.createdAt, scopeFenced);
      if (refused) throw refused;
    }
    if (o.reservation !== undefined) {
      const use = { session: row.use_session ?? 0, tenantDay: row.use_tenant_day ?? 0 };
      const cap = reservationRefusal(o.reservation.limits, use, o.reservation.usdMicros);
      if (cap) return new RolledBack<ClaimResult>(Object.freeze({ status: "refused", cap }));
    }
    return claimedResult(c, row);
  }

  /**
   * One conditional UPDATE. A cancelled claim was never sent: the money it held is released in the
   * same statement as the transition. A dispatch is scope-fenced (`#dispatch`) and a durability
   * point: egress follows, so the claim and everything before it commit with it. In a unit, a row
   * this transaction has updated stays locked to its end, so the next transitions of it are known
   * here (`#known`): they answer at once and go as one late statement (issue 26).
   */
  protected async step(fence: Fence, now: number, step: ExecutionStep): Promise<ExecutionRecord> {
    const release = step.name === "cancelPrepared";
    const { f, at, key, cols } = prepareStep(fence, now, step);
    const id = `execution:${key}:${f.operationId}`;
    const held = this.#db.heldRow<ExecutionRow>(id);
    if (held) {
      if (held.fence_token !== f.token || held.state !== step.from)
        throw staleStep(held, f.token, step.from);
      const known =
        step.name !== "dispatch" && !release
          ? await this.#known(held, id, [key, f.operationId, f.token], at, cols)
          : undefined;
      // Undefined: the transaction that held the row committed meanwhile; the update goes as usual.
      if (known) return known;
    }
    const values = [
      cols.state,
      cols.evidence,
      cols.not_dispatched_cause,
      cols.settlement_id,
      at,
      key,
      f.operationId,
      f.token,
      step.from,
    ];
    // A row it updated stays locked to the transaction's end: noted in the unit's queue (`stood`),
    // never after a dispatch, whose commit ends the transaction.
    const hold = (out: pg.QueryResult<ExecutionRow>) => {
      if (out.rows[0]) this.#db.holdRow(id, out.rows[0]);
    };
    const updated =
      step.name === "dispatch"
        ? await this.#dispatch(f.scope.org, key, values)
        : await this.#db.write<ExecutionRow>(release ? STEP_RELEASING : STEP, values, {
            retry: release,
            stood: hold,
          });
    const row = updated.rows[0];
    if (row) return executionFromRow(row);
    throw staleStep(
      (await this.#db.query<ExecutionRow>(BY_ID, [key, f.operationId])).rows[0],
      f.token,
      step.from,
    );
  }

  /**
   * A transition of a row the unit's transaction holds locked: its new row is computed as the
   * update would (`COALESCE` keeps a column the change leaves out), and one late statement per row
   * sets it (a later transition replaces it while it waits); one that matches nothing divides by
   * zero, which fails the commit and loses the unit: a broken invariant, never a refusal.
   */
  async #known(
    held: ExecutionRow,
    id: string,
    where: readonly [key: string, operationId: string, token: number],
    at: number,
    cols: ExecutionChangeColumns,
  ): Promise<ExecutionRecord | undefined> {
    const row: ExecutionRow = {
      ...held,
      state: cols.state,
      evidence: cols.evidence ?? held.evidence,
      not_dispatched_cause: cols.not_dispatched_cause ?? held.not_dispatched_cause,
      settlement_id: cols.settlement_id ?? held.settlement_id,
      updated_at: at,
    };
    const queued = await this.#db.later(
      KNOWN_STEP,
      [row.state, row.evidence, row.not_dispatched_cause, row.settlement_id, at, ...where],
      undefined,
      id,
      () => this.#db.holdRow(id, row),
    );
    return queued ? executionFromRow(row) : undefined;
  }

  /**
   * The dispatch, scope-fenced: under the tenant's fence lock, shared (see `fenceLock`), one
   * conditional update that also needs no fence over the scope. When it matches nothing, a fence
   * read in the same transaction tells a fenced scope (`ScopeFencedError`, the record left
   * `prepared`) from a stale fence. So a `fenceScope` that returned has seen every dispatch before
   * it commit, and refuses every one after it. A durability point.
   */
  #dispatch(org: string, key: string, values: readonly unknown[]) {
    return this.#db.transaction(
      async (tx) => {
        const updated = await tx.query<ExecutionRow>(DISPATCH, [
          ...values,
          ...coveringFenceKeys(key),
        ]);
        const refused =
          updated.rows.length === 0 ? scopeFenceRefusal(await scopeFencedIn(tx, key)) : undefined;
        if (refused) throw refused;
        return updated;
      },
      // It refuses only when its update matched nothing.
      { locks: fenceLock(this.#schema, org, "shared"), durable: true, undo: false },
    );
  }

  async get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined> {
    const { key, id } = prepareKeyed(scope, "operationId", operationId);
    return executionOf((await this.#db.query<ExecutionRow>(BY_ID, [key, id])).rows[0]);
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number; readonly resolved?: boolean } = {},
  ): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }> {
    const { key, limit, after, resolved } = prepareExecutionList(scope, opts);
    const { rows } = await this.#db.query<ExecutionRow>(
      `SELECT * FROM execution WHERE scope = $1 AND ($5::boolean OR state NOT IN ('completed', 'not_dispatched'))
       AND (created_at, operation_id) > ($2, $3) ORDER BY created_at, operation_id LIMIT $4`,
      [key, after[0], after[1], limit + 1, resolved],
    );
    return executionPage(rows, limit);
  }

  async reconcileExpired(input: {
    readonly now: number;
    readonly scope?: Scope;
  }): Promise<readonly ExecutionRecord[]> {
    const r = prepareReconcile(input);
    // One statement: each row is re-checked under its lock, so a dispatch racing the sweep either
    // commits first (and the record is fenced) or finds its token superseded. A record it makes
    // not_dispatched was never sent: its reservation is deleted in the same statement; a fenced one
    // may have spent, and keeps its reservation until that expires.
    const { rows } = await this.#db.write<ExecutionRow>(
      `WITH swept AS (
         UPDATE execution SET
           state = CASE state WHEN 'prepared' THEN 'not_dispatched' ELSE 'fenced' END,
           not_dispatched_cause = CASE state WHEN 'prepared' THEN 'expired' ELSE not_dispatched_cause END,
           evidence = CASE state WHEN 'prepared' THEN $3 ELSE evidence END,
           fence_token = fence_token + 1, updated_at = $1
         WHERE state IN ('prepared', 'dispatching') AND deadline_at <= $1 AND ($2::text IS NULL OR scope = $2) RETURNING *
       ), released AS (
         DELETE FROM spend_reservations h USING swept s WHERE s.state = 'not_dispatched' AND h.scope = s.scope AND h.operation_id = s.operation_id
       )
       SELECT * FROM swept`,
      [r.now, r.only, EXPIRED_EVIDENCE_COLUMN],
      { retry: true, durable: true },
    );
    return reconciledRecords(rows);
  }
}
