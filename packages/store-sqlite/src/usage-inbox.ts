import {
  normalizeUsageInboxQuery,
  normalizeUsageObservation,
  type Scope,
  sameUsageObservation,
  type UsageInbox,
  type UsageInboxPage,
  type UsageInboxQuery,
  type UsageObservation,
  UsageObservationConflictError,
  type UsageRecordResult,
  usageObservationFromText,
  usageObservationKey,
  usageObservationText,
} from "@alma-harness/core";
import { pageOfFetched } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";

/**
 * Late usage in SQLite (`usage_inbox`, schema version 4): the insert-or-read of one observation in
 * one immediate transaction, so concurrent equal records store one. Evidence only: no statement
 * here touches a receipt, a counter, a reservation or the journal.
 */
export class SqliteUsageInbox implements UsageInbox {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async record(input: UsageObservation): Promise<UsageRecordResult> {
    const { observation: o, key } = normalizeUsageObservation(input);
    return this.#db.write(() => {
      const row = this.#db
        .stmt("SELECT record FROM usage_inbox WHERE scope = ? AND operation_id = ? AND source = ?")
        .get(key, o.operationId, o.source) as { record: string } | undefined;
      if (row) {
        const stored = usageObservationFromText(o.scope, row.record);
        if (sameUsageObservation(stored, o, this.#db.mark))
          return Object.freeze({ status: "replayed" as const, observation: stored });
        throw new UsageObservationConflictError();
      }
      this.#db
        .stmt(
          "INSERT INTO usage_inbox (scope, operation_id, source, session_id, observed_at, record) VALUES (?, ?, ?, ?, ?, ?)",
        )
        .run(key, o.operationId, o.source, o.sessionId, o.observedAt, usageObservationText(o));
      return Object.freeze({ status: "recorded" as const, observation: o });
    });
  }

  async list(scope: Scope, query?: UsageInboxQuery): Promise<UsageInboxPage> {
    const q = normalizeUsageInboxQuery(scope, query);
    const after = q.after ?? [-1, "", ""];
    const sessionId = q.sessionId ?? null;
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT record FROM usage_inbox WHERE scope = ? AND (? IS NULL OR session_id = ?)
             AND (observed_at, operation_id, source) > (?, ?, ?) ORDER BY observed_at, operation_id, source LIMIT ?`,
          )
          .all(q.key, sessionId, sessionId, after[0], after[1], after[2], q.limit + 1) as {
          record: string;
        }[],
    );
    return pageOfFetched(
      rows.map((r) => usageObservationFromText(q.scope, r.record)),
      q.limit,
      usageObservationKey,
    );
  }
}
