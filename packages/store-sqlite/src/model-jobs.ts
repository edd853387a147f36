import {
  advancedJob,
  type ModelJob,
  type ModelJobAdvance,
  ModelJobConflictError,
  type ModelJobItemOutcome,
  type ModelJobState,
  type ModelJobStore,
  modelJobFromRows,
  type ModelJobItemRow,
  type ModelJobRow,
  modelJobItemText,
  modelJobKey,
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
import type { SqliteDb } from "./db.js";

/**
 * Model jobs in SQLite (`model_jobs`, `model_job_items`, schema version 6). Every check and the
 * write it guards run in one immediate transaction: two processes advancing one job, or settling
 * one item, serialize on the file's write lock, and one wins.
 */
export class SqliteModelJobStore implements ModelJobStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async create(
    input: ModelJob,
  ): Promise<{ readonly status: "created" | "exists"; readonly job: ModelJob }> {
    const { job, key } = normalizeNewModelJob(input);
    return this.#db.write(() => {
      const stored = this.#read(job.scope, key, job.jobId);
      if (stored) {
        if (sameModelJob(stored, job, this.#db.mark))
          return Object.freeze({ status: "exists" as const, job: stored });
        throw new ModelJobConflictError();
      }
      this.#db
        .stmt(
          "INSERT INTO model_jobs (scope, job_id, state, transport_id, batch_id, created_at, updated_at, submitting_at) VALUES (?, ?, ?, ?, NULL, ?, ?, NULL)",
        )
        .run(key, job.jobId, job.state, job.transportId, job.createdAt, job.updatedAt);
      const insert = this.#db.stmt(
        "INSERT INTO model_job_items (scope, job_id, ordinal, custom_id, session_id, record) VALUES (?, ?, ?, ?, ?, ?)",
      );
      for (const [i, item] of job.items.entries())
        insert.run(key, job.jobId, i, item.customId, item.sessionId, modelJobItemText(item));
      return Object.freeze({ status: "created" as const, job });
    });
  }

  async get(scope: Scope, jobId: string): Promise<ModelJob | undefined> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    return this.#db.guard(() => this.#read(s, key, id));
  }

  async advance(scope: Scope, jobId: string, change: ModelJobAdvance): Promise<ModelJob> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const c = normalizeAdvance(change);
    return this.#db.write(() => {
      const next = advancedJob(this.#read(s, key, id), c);
      this.#db
        .stmt(
          "UPDATE model_jobs SET state = ?, updated_at = ?, batch_id = ?, submitting_at = ? WHERE scope = ? AND job_id = ?",
        )
        .run(next.state, next.updatedAt, next.batchId ?? null, next.submittingAt ?? null, key, id);
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
    return this.#db.write(() => {
      const item = this.#read(s, key, id)?.items.find((i) => i.customId === settlement.customId);
      if (!item) throw new ModelJobConflictError("no such item in the job");
      const out = settledItem(item, settlement);
      if (out.status === "applied") {
        this.#db
          .stmt(
            "UPDATE model_job_items SET settlement_id = ?, outcome = ? WHERE scope = ? AND job_id = ? AND custom_id = ? AND settlement_id IS NULL",
          )
          .run(settlement.settlementId, settlement.outcome, key, id, settlement.customId);
      }
      return Object.freeze({ status: out.status, job: this.#read(s, key, id) as ModelJob });
    });
  }

  async list(
    scope: Scope,
    query?: { readonly state?: ModelJobState; readonly cursor?: string; readonly limit?: number },
  ) {
    const q = normalizeModelJobQuery(scope, query);
    const after = q.after ?? [-1, ""];
    const state = q.state ?? null;
    return this.#db.guard(() => {
      const rows = this.#db
        .stmt(
          `SELECT job_id FROM model_jobs WHERE scope = ? AND (? IS NULL OR state = ?) AND (created_at, job_id) > (?, ?)
           ORDER BY created_at, job_id LIMIT ?`,
        )
        .all(q.key, state, state, after[0], after[1], q.limit + 1) as { job_id: string }[];
      return pageOfFetched(
        rows.map((r) => this.#read(q.scope, q.key, r.job_id) as ModelJob),
        q.limit,
        modelJobKey,
      );
    });
  }

  #read(scope: Scope, key: string, jobId: string): ModelJob | undefined {
    const row = this.#db
      .stmt("SELECT * FROM model_jobs WHERE scope = ? AND job_id = ?")
      .get(key, jobId) as ModelJobRow | undefined;
    if (!row) return undefined;
    const items = this.#db
      .stmt(
        "SELECT record, settlement_id, outcome FROM model_job_items WHERE scope = ? AND job_id = ? ORDER BY ordinal",
      )
      .all(key, jobId) as ModelJobItemRow[];
    return modelJobFromRows(scope, row, items);
  }
}
