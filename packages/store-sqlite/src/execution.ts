import type {
  ClaimOptions,
  ClaimResult,
  ExecutionClaim,
  ExecutionRecord,
  ExecutionState,
  ExecutionStore,
  Fence,
  Scope,
} from "@alma-harness/core";
import {
  claimedResult,
  EXPIRED_EVIDENCE_COLUMN,
  type ExecutionRow,
  type ExecutionStep,
  executionFromRow,
  executionOf,
  executionPage,
  existingClaim,
  FencedJournal,
  prepareClaim,
  prepareExecutionList,
  prepareKeyed,
  prepareReconcile,
  prepareStep,
  RECORD_VERSION,
  reconciledRecords,
  scopeFenceRefusal,
  staleStep,
} from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { checkFence, release, reserve, scopeFenced } from "./spend.js";

const BY_ID = "SELECT * FROM execution WHERE scope = ? AND operation_id = ?";

/** The execution journal in SQLite: claims insert under an immediate transaction; transitions are conditional updates on (token, state). */
export class SqliteExecutionStore extends FencedJournal implements ExecutionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    super();
    this.#db = db;
  }

  async claim(claim: ExecutionClaim, opts?: ClaimOptions): Promise<ClaimResult> {
    const { c, o, key, text } = prepareClaim(claim, opts);
    // One transaction: the retry check, the admission fence, the reservation and the claim.
    return this.#db.write((): ClaimResult => {
      const existing = this.#db.stmt(BY_ID).get(key, c.operationId) as ExecutionRow | undefined;
      if (existing) return existingClaim(existing, c, text);
      if (o.admissionId !== undefined)
        checkFence(this.#db, key, o.admissionId, c.sessionId, c.createdAt);
      if (o.reservation !== undefined) {
        const cap = reserve(
          this.#db,
          {
            scopeKey: key,
            org: c.scope.org,
            sessionId: c.sessionId,
            operationId: c.operationId,
            now: c.createdAt,
          },
          o.reservation,
        );
        if (cap) return Object.freeze({ status: "refused", cap });
      }
      const row = this.#db
        .stmt(
          `INSERT INTO execution (scope, operation_id, claim, created_at, deadline_at, state, fence_token, v, updated_at)
           VALUES (?, ?, ?, ?, ?, 'prepared', 1, ?, ?) RETURNING *`,
        )
        .get(
          key,
          c.operationId,
          text,
          c.createdAt,
          c.deadlineAt,
          RECORD_VERSION,
          c.createdAt,
        ) as ExecutionRow;
      return claimedResult(c, row);
    });
  }

  protected async step(fence: Fence, now: number, step: ExecutionStep): Promise<ExecutionRecord> {
    // A cancelled claim was never sent: what it held is free again, in the same transaction.
    const record = this.#step(
      fence,
      now,
      step,
      step.name === "cancelPrepared" ? (key, id) => release(this.#db, key, id) : undefined,
    );
    // Egress follows a dispatch: everything pending (the claim, its reservation, the trails) is made durable with it.
    if (step.name === "dispatch") this.#db.commit();
    return record;
  }

  async get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined> {
    const { key, id } = prepareKeyed(scope, "operationId", operationId);
    return executionOf(
      this.#db.guard(() => this.#db.stmt(BY_ID).get(key, id) as ExecutionRow | undefined),
    );
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number; readonly resolved?: boolean } = {},
  ): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }> {
    const { key, limit, after, resolved } = prepareExecutionList(scope, opts);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT * FROM execution WHERE scope = ? AND (? = 1 OR state NOT IN ('completed', 'not_dispatched'))
             AND (created_at, operation_id) > (?, ?) ORDER BY created_at, operation_id LIMIT ?`,
          )
          .all(key, resolved ? 1 : 0, after[0], after[1], limit + 1) as ExecutionRow[],
    );
    return executionPage(rows, limit);
  }

  async reconcileExpired(input: {
    readonly now: number;
    readonly scope?: Scope;
  }): Promise<readonly ExecutionRecord[]> {
    const r = prepareReconcile(input);
    const only = r.only;
    const where = `deadline_at <= ? AND state = ? ${only === null ? "" : "AND scope = ?"}`;
    const params = (state: ExecutionState) =>
      only === null ? [r.now, state] : [r.now, state, only];
    const rows = this.#db.durable(() => {
      const idle = this.#db
        .stmt(
          `UPDATE execution SET state = 'not_dispatched', not_dispatched_cause = 'expired', evidence = '${EXPIRED_EVIDENCE_COLUMN}',
           fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`,
        )
        .all(r.now, ...params("prepared")) as (ExecutionRow & {
        readonly scope: string;
        readonly operation_id: string;
      })[];
      // Never sent: what they held is free again. A fenced record may have spent: it stays held.
      for (const row of idle) release(this.#db, row.scope, row.operation_id);
      return [
        ...idle,
        ...(this.#db
          .stmt(
            `UPDATE execution SET state = 'fenced', fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`,
          )
          .all(r.now, ...params("dispatching")) as ExecutionRow[]),
      ];
    });
    return reconciledRecords(rows);
  }

  /** One fenced transition: a conditional update on (token, state); no row changed means the fence is stale. */
  #step(
    fence: Fence,
    now: number,
    step: ExecutionStep,
    effect?: (scopeKey: string, operationId: string) => void,
  ): ExecutionRecord {
    const { f, at, key, cols } = prepareStep(fence, now, step);
    return this.#db.write(() => {
      // The dispatch is scope-fenced, checked in its own write transaction (SQLite's one writer:
      // `fenceScope` lands wholly before or after it), before the record's state.
      const refused =
        step.name === "dispatch" ? scopeFenceRefusal(scopeFenced(this.#db, key)) : undefined;
      if (refused) throw refused;
      const row = this.#db
        .stmt(
          `UPDATE execution SET state = ?, evidence = COALESCE(?, evidence), not_dispatched_cause = COALESCE(?, not_dispatched_cause),
           settlement_id = COALESCE(?, settlement_id), updated_at = ?
           WHERE scope = ? AND operation_id = ? AND fence_token = ? AND state = ? RETURNING *`,
        )
        .get(
          cols.state,
          cols.evidence,
          cols.not_dispatched_cause,
          cols.settlement_id,
          at,
          key,
          f.operationId,
          f.token,
          step.from,
        ) as ExecutionRow | undefined;
      if (row) {
        effect?.(key, f.operationId);
        return executionFromRow(row);
      }
      throw staleStep(
        this.#db.stmt(BY_ID).get(key, f.operationId) as ExecutionRow | undefined,
        f.token,
        step.from,
      );
    });
  }
}
