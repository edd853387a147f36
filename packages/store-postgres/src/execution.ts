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
import type pg from "pg";
import { decodeJson, RECORD_VERSION, run } from "./pg.js";

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
  return Object.freeze({
    ...decodeJson<ExecutionClaim>(row.v, row.claim),
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

const BY_ID = "SELECT * FROM execution WHERE scope = $1 AND operation_id = $2";
const EXPIRED_EVIDENCE = canonicalJson({ status: "not_dispatched", cause: "expired" });

/**
 * The execution journal in PostgreSQL. A claim is an insert-or-nothing on the primary key, so one
 * caller gets the fence; every transition is one conditional UPDATE on (fence token, state), so a
 * fence the sweep superseded matches no row and writes nothing.
 */
export class PgExecutionStore implements ExecutionStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async claim(claim: ExecutionClaim): Promise<ClaimResult> {
    const c = normalizeClaim(claim);
    const { key } = scopeKey(c.scope);
    const text = canonicalJson(c as unknown as JsonValue);
    const inserted = await run<ExecutionRow>(
      this.#pool,
      `INSERT INTO execution (scope, operation_id, session_id, turn_id, claim, created_at, deadline_at, state, fence_token, v, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'prepared', 1, $8, $6) ON CONFLICT (scope, operation_id) DO NOTHING RETURNING *`,
      [key, c.operationId, c.sessionId, c.turnId, text, c.createdAt, c.deadlineAt, RECORD_VERSION],
    );
    const row = inserted.rows[0];
    if (row) {
      const fence: Fence = Object.freeze({ scope: c.scope, operationId: c.operationId, token: 1 });
      return Object.freeze({ status: "claimed", fence, record: toRecord(row) });
    }
    const existing = (await run<ExecutionRow>(this.#pool, BY_ID, [key, c.operationId])).rows[0];
    if (!existing) throw new StaleFenceError("the operation vanished while claiming");
    if (existing.claim !== text) throw new ConflictError("execution_conflict", `operation "${c.operationId}" was claimed with different input`);
    return Object.freeze({ status: "exists", record: toRecord(existing) });
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
    const row = (await run<ExecutionRow>(this.#pool, BY_ID, [key, validateId("operationId", operationId)])).rows[0];
    return row ? toRecord(row) : undefined;
  }

  async list(scope: Scope, opts: { readonly cursor?: string; readonly limit?: number } = {}): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const o = closedObject("opts", opts, ["cursor", "limit"]);
    const limit = pageLimit(o.limit, PAGE.execution.def, PAGE.execution.max);
    const after = decodeCursor(o.cursor, ["number", "string"]) ?? [-1, ""];
    const { rows } = await run<ExecutionRow>(
      this.#pool,
      `SELECT * FROM execution WHERE scope = $1 AND state NOT IN ('completed', 'not_dispatched')
       AND (created_at, operation_id) > ($2, $3) ORDER BY created_at, operation_id LIMIT $4`,
      [key, after[0], after[1], limit + 1],
    );
    return Object.freeze(pageOfFetched(rows.map(toRecord), limit, (r) => [r.createdAt, r.operationId]));
  }

  async reconcileExpired(input: { readonly now: number; readonly scope?: Scope }): Promise<readonly ExecutionRecord[]> {
    const r = normalizeReconcile(input);
    const only = r.scope === undefined ? null : scopeKey(r.scope).key;
    // One statement: each row is re-checked under its lock, so a dispatch racing the sweep either
    // commits first (and the record is fenced) or finds its token superseded.
    const { rows } = await run<ExecutionRow>(
      this.#pool,
      `UPDATE execution SET
         state = CASE state WHEN 'prepared' THEN 'not_dispatched' ELSE 'fenced' END,
         not_dispatched_cause = CASE state WHEN 'prepared' THEN 'expired' ELSE not_dispatched_cause END,
         evidence = CASE state WHEN 'prepared' THEN $3 ELSE evidence END,
         fence_token = fence_token + 1, updated_at = $1
       WHERE state IN ('prepared', 'dispatching') AND deadline_at <= $1 AND ($2::text IS NULL OR scope = $2) RETURNING *`,
      [r.now, only, EXPIRED_EVIDENCE],
    );
    const records = rows.map(toRecord).sort((a, b) => a.createdAt - b.createdAt || (a.operationId < b.operationId ? -1 : 1));
    return Object.freeze(records);
  }

  async #step(fence: Fence, now: number, from: ExecutionState, change: Change): Promise<ExecutionRecord> {
    const f = normalizeFence(fence);
    const at = validateTime("now", now);
    const { key } = scopeKey(f.scope);
    const evidence = change.evidence === undefined ? null : canonicalJson(change.evidence as unknown as JsonValue);
    const updated = await run<ExecutionRow>(
      this.#pool,
      `UPDATE execution SET state = $1, evidence = COALESCE($2, evidence), not_dispatched_cause = COALESCE($3, not_dispatched_cause),
         settlement_id = COALESCE($4, settlement_id), updated_at = $5
       WHERE scope = $6 AND operation_id = $7 AND fence_token = $8 AND state = $9 RETURNING *`,
      [change.state, evidence, change.cause ?? null, change.settlementId ?? null, at, key, f.operationId, f.token, from],
    );
    const row = updated.rows[0];
    if (row) return toRecord(row);
    const current = (await run<ExecutionRow>(this.#pool, BY_ID, [key, f.operationId])).rows[0];
    if (current && current.fence_token === f.token) throw new StaleFenceError(`the record is ${current.state}, not ${from}`);
    throw new StaleFenceError();
  }
}
