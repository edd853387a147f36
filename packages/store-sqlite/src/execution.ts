import {
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
  normalizeCancelCause,
  normalizeClaim,
  normalizeFence,
  normalizeReceivedEvidence,
  normalizeReconcile,
  PAGE,
  pageLimit,
  pageOfFetched,
  scopeKey,
  validateTime,
} from "@alma-harness/core/testing";
import { decodeJson, RECORD_VERSION, type SqliteDb } from "./db.js";

interface ExecutionRow {
  readonly claim: string;
  readonly state: ExecutionState;
  readonly fence_token: number;
  readonly v: number;
  readonly evidence: string | null;
  readonly not_dispatched_cause: NotDispatchedCause | null;
  readonly settlement_id: string | null;
  readonly updated_at: number;
}

function toRecord(row: ExecutionRow): ExecutionRecord {
  const claim = decodeJson<ExecutionClaim>(row.v, row.claim);
  return Object.freeze({
    ...claim,
    state: row.state,
    fenceToken: row.fence_token,
    updatedAt: row.updated_at,
    ...(row.evidence === null ? {} : { evidence: decodeJson<UsageEvidence>(row.v, row.evidence) }),
    ...(row.not_dispatched_cause === null ? {} : { notDispatchedCause: row.not_dispatched_cause }),
    ...(row.settlement_id === null ? {} : { settlementId: row.settlement_id }),
  });
}

interface Change {
  readonly state: ExecutionState;
  readonly evidence?: UsageEvidence;
  readonly cause?: NotDispatchedCause;
  readonly settlementId?: string;
}

const BY_ID = "SELECT * FROM execution WHERE scope = ? AND operation_id = ?";
const EXPIRED_EVIDENCE = canonicalJson({ status: "not_dispatched", cause: "expired" });

/** The execution journal in SQLite: claims insert under an immediate transaction; transitions are conditional updates on (token, state). */
export class SqliteExecutionStore implements ExecutionStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async claim(claim: ExecutionClaim): Promise<ClaimResult> {
    const c = normalizeClaim(claim);
    const { key } = scopeKey(c.scope);
    const text = canonicalJson(c as unknown as JsonValue);
    return this.#db.write((): ClaimResult => {
      const existing = this.#db.stmt(BY_ID).get(key, c.operationId) as ExecutionRow | undefined;
      if (existing) {
        if (existing.claim !== text) throw new ConflictError("execution_conflict", `operation "${c.operationId}" was claimed with different input`);
        return Object.freeze({ status: "exists", record: toRecord(existing) });
      }
      const row = this.#db
        .stmt(
          `INSERT INTO execution (scope, operation_id, claim, created_at, deadline_at, state, fence_token, v, updated_at)
           VALUES (?, ?, ?, ?, ?, 'prepared', 1, ?, ?) RETURNING *`,
        )
        .get(key, c.operationId, text, c.createdAt, c.deadlineAt, RECORD_VERSION, c.createdAt) as ExecutionRow;
      const fence: Fence = Object.freeze({ scope: c.scope, operationId: c.operationId, token: 1 });
      return Object.freeze({ status: "claimed", fence, record: toRecord(row) });
    });
  }

  async dispatch(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "prepared", { state: "dispatching" });
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
    return this.#step(fence, now, "prepared", { state: "not_dispatched", cause: c, evidence: { status: "not_dispatched", cause: c } });
  }

  async get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("operationId", operationId);
    const row = this.#db.guard(() => this.#db.stmt(BY_ID).get(key, id) as ExecutionRow | undefined);
    return row ? toRecord(row) : undefined;
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
    return Object.freeze(pageOfFetched(rows.map(toRecord), limit, (r) => [r.createdAt, r.operationId]));
  }

  async reconcileExpired(input: { readonly now: number; readonly scope?: Scope }): Promise<readonly ExecutionRecord[]> {
    const r = normalizeReconcile(input);
    const only = r.scope === undefined ? undefined : scopeKey(r.scope).key;
    const where = `deadline_at <= ? AND state = ? ${only === undefined ? "" : "AND scope = ?"}`;
    const params = (state: ExecutionState) => (only === undefined ? [r.now, state] : [r.now, state, only]);
    const rows = this.#db.write(() => [
      ...(this.#db
        .stmt(
          `UPDATE execution SET state = 'not_dispatched', not_dispatched_cause = 'expired', evidence = '${EXPIRED_EVIDENCE}',
           fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`,
        )
        .all(r.now, ...params("prepared")) as ExecutionRow[]),
      ...(this.#db
        .stmt(`UPDATE execution SET state = 'fenced', fence_token = fence_token + 1, updated_at = ? WHERE ${where} RETURNING *`)
        .all(r.now, ...params("dispatching")) as ExecutionRow[]),
    ]);
    const records = rows.map(toRecord);
    records.sort((a, b) => a.createdAt - b.createdAt || (a.operationId < b.operationId ? -1 : 1));
    return Object.freeze(records);
  }

  /** One fenced transition: a conditional update on (token, state); no row changed means the fence is stale. */
  #step(fence: Fence, now: number, from: ExecutionState, change: Change): ExecutionRecord {
    const f = normalizeFence(fence);
    const at = validateTime("now", now);
    const { key } = scopeKey(f.scope);
    const evidence = change.evidence === undefined ? null : canonicalJson(change.evidence as unknown as JsonValue);
    return this.#db.write(() => {
      const row = this.#db
        .stmt(
          `UPDATE execution SET state = ?, evidence = COALESCE(?, evidence), not_dispatched_cause = COALESCE(?, not_dispatched_cause),
           settlement_id = COALESCE(?, settlement_id), updated_at = ?
           WHERE scope = ? AND operation_id = ? AND fence_token = ? AND state = ? RETURNING *`,
        )
        .get(change.state, evidence, change.cause ?? null, change.settlementId ?? null, at, key, f.operationId, f.token, from) as
        | ExecutionRow
        | undefined;
      if (row) return toRecord(row);
      const current = this.#db.stmt(BY_ID).get(key, f.operationId) as ExecutionRow | undefined;
      if (current && current.fence_token === f.token) throw new StaleFenceError(`the record is ${current.state}, not ${from}`);
      throw new StaleFenceError();
    });
  }
}
