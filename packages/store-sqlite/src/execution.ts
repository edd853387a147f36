import {
  type ClaimOptions,
  type ClaimResult,
  ConflictError,
  canonicalJson,
  type ExecutionClaim,
  type ExecutionRecord,
  type ExecutionState,
  type ExecutionStore,
  type Fence,
  type JsonValue,
  type NotDispatchedCause,
  type Scope,
  StaleFenceError,
  type UsageEvidence,
  validateId,
} from "@alma-harness/core";
import {
  closedObject,
  decodeCursor,
  EXPIRED_EVIDENCE_COLUMN,
  type ExecutionChange,
  type ExecutionRow,
  executionChangeColumns,
  executionFromRow,
  normalizeCancelCause,
  normalizeClaim,
  normalizeClaimOptions,
  normalizeFence,
  normalizeReceivedEvidence,
  normalizeReconcile,
  PAGE,
  pageLimit,
  pageOfFetched,
  RECORD_VERSION,
  scopeKey,
  validateTime,
} from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { checkFence, release, reserve } from "./spend.js";

const BY_ID = "SELECT * FROM execution WHERE scope = ? AND operation_id = ?";

/** The execution journal in SQLite: claims insert under an immediate transaction; transitions are conditional updates on (token, state). */
export class SqliteExecutionStore implements ExecutionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async claim(claim: ExecutionClaim, opts?: ClaimOptions): Promise<ClaimResult> {
    const c = normalizeClaim(claim);
    const o = normalizeClaimOptions(opts);
    const { key } = scopeKey(c.scope);
    const text = canonicalJson(c as unknown as JsonValue);
    // One transaction: the retry check, the admission fence, the reservation and the claim.
    return this.#db.write((): ClaimResult => {
      const existing = this.#db.stmt(BY_ID).get(key, c.operationId) as ExecutionRow | undefined;
      if (existing) {
        if (existing.claim !== text) throw new ConflictError("execution_conflict", `operation "${c.operationId}" was claimed with different input`);
        return Object.freeze({ status: "exists", record: executionFromRow(existing) });
      }
      if (o.admissionId !== undefined) checkFence(this.#db, key, o.admissionId, c.sessionId, c.createdAt);
      if (o.reservation !== undefined) {
        const cap = reserve(this.#db, { scopeKey: key, org: c.scope.org, sessionId: c.sessionId, operationId: c.operationId, now: c.createdAt }, o.reservation);
        if (cap) return Object.freeze({ status: "refused", cap });
      }
      const row = this.#db
        .stmt(
          `INSERT INTO execution (scope, operation_id, claim, created_at, deadline_at, state, fence_token, v, updated_at)
           VALUES (?, ?, ?, ?, ?, 'prepared', 1, ?, ?) RETURNING *`,
        )
        .get(key, c.operationId, text, c.createdAt, c.deadlineAt, RECORD_VERSION, c.createdAt) as ExecutionRow;
      const fence: Fence = Object.freeze({ scope: c.scope, operationId: c.operationId, token: 1 });
      return Object.freeze({ status: "claimed", fence, record: executionFromRow(row) });
    });
  }

  async dispatch(fence: Fence, now: number): Promise<ExecutionRecord> {
    const record = this.#step(fence, now, "prepared", { state: "dispatching" });
    // Egress follows: everything pending (the claim, its reservation, the trails) is made durable with it.
    this.#db.commit();
    return record;
  }

  async receive(fence: Fence, evidence: UsageEvidence, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "dispatching", { state: "received", evidence: normalizeReceivedEvidence(evidence) });
  }

  async settle(fence: Fence, settlementId: string, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "received", { state: "settled", settlementId: validateId("settlementId", settlementId) });
  }

  async complete(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "settled", { state: "completed" });
  }

  async cancelPrepared(fence: Fence, cause: Exclude<NotDispatchedCause, "expired">, now: number): Promise<ExecutionRecord> {
    const c = normalizeCancelCause(cause);
    return this.#step(fence, now, "prepared", { state: "not_dispatched", cause: c, evidence: { status: "not_dispatched", cause: c } }, (key, id) =>
      release(this.#db, key, id),
    );
  }

  async get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("operationId", operationId);
    const row = this.#db.guard(() => this.#db.stmt(BY_ID).get(key, id) as ExecutionRow | undefined);
    return row ? executionFromRow(row) : undefined;
  }

  async list(scope: Scope, opts: { readonly cursor?: string; readonly limit?: number } = {}): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const o = closedObject("opts", opts, ["cursor", "limit"]);
    const limit = pageLimit(o.limit, PAGE.execution.def, PAGE.execution.max);
    const after = decodeCursor(o.cursor, ["number", "string"]) ?? [-1, ""];
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT * FROM execution WHERE scope = ? AND state NOT IN ('completed', 'not_dispatched')
             AND (created_at, operation_id) > (?, ?) ORDER BY created_at, operation_id LIMIT ?`,
          )
          .all(key, after[0], after[1], limit + 1) as ExecutionRow[],
    );
    return Object.freeze(pageOfFetched(rows.map(executionFromRow), limit, (r) => [r.createdAt, r.operationId]));
  }

  async reconcileExpired(input: { readonly now: number; readonly scope?: Scope }): Promise<readonly ExecutionRecord[]> {
    const r = normalizeReconcile(input);
    const only = r.scope === undefined ? undefined : scopeKey(r.scope).key;
    const where = `deadline_at <= ? AND state = ? ${only === undefined ? "" : "AND scope = ?"}`;
    const params = (state: ExecutionState) => (only === undefined ? [r.now, state] : [r.now, state, only]);
    const rows = this.#db.durable(() => {
      const idle = this.#db
        .stmt(
          `UPDATE execution SET state = 'not_dispatched', not_dispatched_cause = 'expired', evidence = '${EXPIRED_EVIDENCE_COLUMN}',
           fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`,
        )
        .all(r.now, ...params("prepared")) as (ExecutionRow & { readonly scope: string; readonly operation_id: string })[];
      // Never sent: what they held is free again. A fenced record may have spent: it stays held.
      for (const row of idle) release(this.#db, row.scope, row.operation_id);
      return [
        ...idle,
      ...(this.#db
        .stmt(`UPDATE execution SET state = 'fenced', fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`)
        .all(r.now, ...params("dispatching")) as ExecutionRow[]),
      ];
    });
    const records = rows.map(executionFromRow);
    records.sort((a, b) => a.createdAt - b.createdAt || (a.operationId < b.operationId ? -1 : 1));
    return Object.freeze(records);
  }

  /** One fenced transition: a conditional update on (token, state); no row changed means the fence is stale. */
  #step(fence: Fence, now: number, from: ExecutionState, change: ExecutionChange, effect?: (scopeKey: string, operationId: string) => void): ExecutionRecord {
    const f = normalizeFence(fence);
    const at = validateTime("now", now);
    const { key } = scopeKey(f.scope);
    const cols = executionChangeColumns(change);
    return this.#db.write(() => {
      const row = this.#db
        .stmt(
          `UPDATE execution SET state = ?, evidence = COALESCE(?, evidence), not_dispatched_cause = COALESCE(?, not_dispatched_cause),
           settlement_id = COALESCE(?, settlement_id), updated_at = ?
           WHERE scope = ? AND operation_id = ? AND fence_token = ? AND state = ? RETURNING *`,
        )
        .get(cols.state, cols.evidence, cols.not_dispatched_cause, cols.settlement_id, at, key, f.operationId, f.token, from) as
        | ExecutionRow
        | undefined;
      if (row) {
        effect?.(key, f.operationId);
        return executionFromRow(row);
      }
      const current = this.#db.stmt(BY_ID).get(key, f.operationId) as ExecutionRow | undefined;
      if (current && current.fence_token === f.token) throw new StaleFenceError(`the record is ${current.state}, not ${from}`);
      throw new StaleFenceError();
    });
  }
}
