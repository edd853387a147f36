import {
  advancedJob,
  type ModelJob,
  type ModelJobAdvance,
  ModelJobConflictError,
  modelJobFromRows,
  type ModelJobItemOutcome,
  type ModelJobItemRow,
  modelJobItemText,
  modelJobKey,
  type ModelJobRow,
  type ModelJobState,
  type ModelJobStore,
  normalizeAdvance,
  normalizeItemSettlement,
  normalizeModelJobQuery,
  normalizeNewModelJob,
  type Scope,
  sameModelJob,
  settledItem,
  validateCustomId,
} from "@alma-harness/core";
import { pageOfFetched, scopeKey } from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import type { Queryable } from "./pg.js";

/**
 * Model jobs in PostgreSQL (`model_jobs`, `model_job_items`, migration 0007). `create` inserts the
 * job row or nothing (a concurrent equal create reads the winner's); `advance` and `settleItem`
 * lock the row they change `FOR UPDATE` in their transaction, so two processes advancing one job,
 * or settling one item, serialize there and one wins.
 */
export class PgModelJobStore implements ModelJobStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async create(
    input: ModelJob,
  ): Promise<{ readonly status: "created" | "exists"; readonly job: ModelJob }> {
    const { job, key } = normalizeNewModelJob(input);
    const created = await this.#db.transaction(async (tx) => {
      const { rows } = await tx.query(
        `INSERT INTO model_jobs (scope, job_id, state, transport_id, batch_id, created_at, updated_at, submitting_at)
         VALUES ($1, $2, $3, $4, NULL, $5, $6, NULL) ON CONFLICT (scope, job_id) DO NOTHING RETURNING 1 AS n`,
        [key, job.jobId, job.state, job.transportId, job.createdAt, job.updatedAt],
      );
      if (rows.length === 0) return false;
      for (const [i, item] of job.items.entries()) {
        await tx.query(
          "INSERT INTO model_job_items (scope, job_id, ordinal, custom_id, session_id, record) VALUES ($1, $2, $3, $4, $5, $6)",
          [key, job.jobId, i, item.customId, item.sessionId, modelJobItemText(item)],
        );
      }
      return true;
    });
    if (created) return Object.freeze({ status: "created", job });
    const stored = await readJob(this.#db, job.scope, key, job.jobId);
    if (stored && sameModelJob(stored, job, (scope, id) => this.#db.mark(scope, id)))
      return Object.freeze({ status: "exists", job: stored });
    throw new ModelJobConflictError();
  }

  async get(scope: Scope, jobId: string): Promise<ModelJob | undefined> {
    const { scope: s, key } = scopeKey(scope);
    return readJob(this.#db, s, key, validateCustomId("jobId", jobId));
  }

  async advance(scope: Scope, jobId: string, change: ModelJobAdvance): Promise<ModelJob> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const c = normalizeAdvance(change);
    return this.#db.transaction(async (tx) => {
      const next = advancedJob(await readJob(tx, s, key, id, true), c);
      await tx.query(
        "UPDATE model_jobs SET state = $3, updated_at = $4, batch_id = $5, submitting_at = $6 WHERE scope = $1 AND job_id = $2",
        [key, id, next.state, next.updatedAt, next.batchId ?? null, next.submittingAt ?? null],
      );
      return next;
    });
  }

  async settleItem(
    scope: Scope,
    jobId: string,
    customId: string,
    settled: { readonly settlementId: string; readonly outcome: ModelJobItemOutcome },
  ): Promise<{ readonly status: "applied" | "replayed"; readonly job: ModelJob }> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const settlement = normalizeItemSettlement(customId, settled);
    return this.#db.transaction(async (tx) => {
      const item = (await readJob(tx, s, key, id, true))?.items.find(
        (i) => i.customId === settlement.customId,
      );
      if (!item) throw new ModelJobConflictError("no such item in the job");
      const out = settledItem(item, settlement);
      if (out.status === "applied") {
        await tx.query(
          "UPDATE model_job_items SET settlement_id = $4, outcome = $5 WHERE scope = $1 AND job_id = $2 AND custom_id = $3 AND settlement_id IS NULL",
          [key, id, settlement.customId, settlement.settlementId, settlement.outcome],
        );
      }
      return Object.freeze({
        status: out.status,
        job: (await readJob(tx, s, key, id)) as ModelJob,
      });
    });
  }

  async list(
    scope: Scope,
    query?: { readonly state?: ModelJobState; readonly cursor?: string; readonly limit?: number },
  ) {
    const q = normalizeModelJobQuery(scope, query);
    const after = q.after ?? [-1, ""];
    const { rows } = await this.#db.query<{ job_id: string }>(
      `SELECT job_id FROM model_jobs WHERE scope = $1 AND ($2::text IS NULL OR state = $2) AND (created_at, job_id) > ($3, $4)
       ORDER BY created_at, job_id LIMIT $5`,
      [q.key, q.state ?? null, after[0], after[1], q.limit + 1],
    );
    const jobs: ModelJob[] = [];
    for (const r of rows) {
      const job = await readJob(this.#db, q.scope, q.key, r.job_id);
      if (job) jobs.push(job);
    }
    return pageOfFetched(jobs, q.limit, modelJobKey);
  }
}

/** The job and its items (`lock`: the job row `FOR UPDATE`, inside a transaction). */
async function readJob(
  db: Queryable,
  scope: Scope,
  key: string,
  jobId: string,
  lock = false,
): Promise<ModelJob | undefined> {
  const { rows } = await db.query<ModelJobRow>(
    `SELECT * FROM model_jobs WHERE scope = $1 AND job_id = $2${lock ? " FOR UPDATE" : ""}`,
    [key, jobId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const items = await db.query<ModelJobItemRow>(
    "SELECT record, settlement_id, outcome FROM model_job_items WHERE scope = $1 AND job_id = $2 ORDER BY ordinal",
    [key, jobId],
  );
  return modelJobFromRows(scope, row, items.rows);
}
