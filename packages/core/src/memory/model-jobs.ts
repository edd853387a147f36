import type { Scope } from "../scope.js";
import { isErasedMark, type SessionMarker, sessionMarker } from "../stores/erasure.js";
import {
  advancedJob,
  type ModelJob,
  type ModelJobAdvance,
  ModelJobConflictError,
  type ModelJobItemOutcome,
  type ModelJobState,
  type ModelJobStore,
  modelJobKey,
  normalizeAdvance,
  normalizeItemSettlement,
  normalizeModelJobQuery,
  normalizeNewModelJob,
  sameModelJob,
  settledItem,
} from "../stores/model-jobs.js";
import { compareKeys, pageOf, scopeKey } from "../stores/rules.js";
import { validateCustomId } from "../stores/model-jobs.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

/** The reference model-job store: one map keyed by scope and job id; every call one synchronous step. Volatile. */
export class InMemoryModelJobStore implements ModelJobStore, Erasable {
  readonly #rows = new Map<string, { readonly key: string; job: ModelJob }>();
  readonly #marker: SessionMarker;

  constructor(marker: SessionMarker = sessionMarker()) {
    this.#marker = marker;
  }

  async create(
    input: ModelJob,
  ): Promise<{ readonly status: "created" | "exists"; readonly job: ModelJob }> {
    const { job, key } = normalizeNewModelJob(input);
    const existing = this.#rows.get(`${key} ${job.jobId}`);
    if (existing) {
      if (sameModelJob(existing.job, job, this.#marker))
        return Object.freeze({ status: "exists", job: existing.job });
      throw new ModelJobConflictError();
    }
    this.#rows.set(`${key} ${job.jobId}`, { key, job });
    return Object.freeze({ status: "created", job });
  }

  async get(scope: Scope, jobId: string): Promise<ModelJob | undefined> {
    const { key } = scopeKey(scope);
    return this.#rows.get(`${key} ${validateCustomId("jobId", jobId)}`)?.job;
  }

  async advance(scope: Scope, jobId: string, change: ModelJobAdvance): Promise<ModelJob> {
    const { key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const c = normalizeAdvance(change);
    const row = this.#rows.get(`${key} ${id}`);
    const next = advancedJob(row?.job, c);
    if (row) row.job = next;
    return next;
  }

  async settleItem(
    scope: Scope,
    jobId: string,
    customId: string,
    settled: { readonly settlementId: string; readonly outcome: ModelJobItemOutcome },
  ): Promise<{ readonly status: "applied" | "replayed"; readonly job: ModelJob }> {
    const { key } = scopeKey(scope);
    const id = validateCustomId("jobId", jobId);
    const s = normalizeItemSettlement(customId, settled);
    const row = this.#rows.get(`${key} ${id}`);
    const index = row?.job.items.findIndex((i) => i.customId === s.customId) ?? -1;
    if (!row || index < 0) throw new ModelJobConflictError("no such item in the job");
    const out = settledItem(row.job.items[index] as ModelJob["items"][number], s);
    if (out.status === "applied") {
      const items = row.job.items.map((item, i) => (i === index ? out.item : item));
      row.job = Object.freeze({ ...row.job, items: Object.freeze(items) });
    }
    return Object.freeze({ status: out.status, job: row.job });
  }

  async list(
    scope: Scope,
    query?: { readonly state?: ModelJobState; readonly cursor?: string; readonly limit?: number },
  ) {
    const q = normalizeModelJobQuery(scope, query);
    const sorted = [...this.#rows.values()]
      .filter((r) => r.key === q.key && (q.state === undefined || r.job.state === q.state))
      .map((r) => r.job)
      .sort((a, b) => compareKeys(modelJobKey(a), modelJobKey(b)));
    return pageOf(sorted, modelJobKey, q.after, q.limit);
  }

  /** An erased session's items keep their claim under its mark (the receipts they point at do too). */
  [ERASE](target: EraseTarget): number {
    for (const row of this.#rows.values()) {
      if (
        !row.job.items.some(
          (item) => covers(target, row.key, item.sessionId) && !isErasedMark(item.sessionId),
        )
      )
        continue;
      const items = row.job.items.map((item) =>
        covers(target, row.key, item.sessionId) && !isErasedMark(item.sessionId)
          ? Object.freeze({ ...item, sessionId: markOf(target, item.sessionId) })
          : item,
      );
      row.job = Object.freeze({ ...row.job, items: Object.freeze(items) });
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#rows];
  }
}
