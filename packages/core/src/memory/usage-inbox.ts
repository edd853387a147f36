import type { Scope } from "../scope.js";
import { isErasedMark, type SessionMarker, sessionMarker } from "../stores/erasure.js";
import { UsageObservationConflictError } from "../stores/errors.js";
import { compareKeys, pageOf } from "../stores/rules.js";
import {
  normalizeUsageInboxQuery,
  normalizeUsageObservation,
  sameUsageObservation,
  type UsageInbox,
  type UsageInboxPage,
  type UsageInboxQuery,
  type UsageObservation,
  type UsageRecordResult,
  usageObservationKey,
} from "../stores/usage-inbox.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

/** The reference usage inbox: one map per store, keyed by scope, operation and source. Volatile. */
export class InMemoryUsageInbox implements UsageInbox, Erasable {
  readonly #rows = new Map<string, { readonly key: string; observation: UsageObservation }>();
  readonly #marker: SessionMarker;

  constructor(marker: SessionMarker = sessionMarker()) {
    this.#marker = marker;
  }

  async record(input: UsageObservation): Promise<UsageRecordResult> {
    const { observation, key } = normalizeUsageObservation(input);
    const rowKey = `${key} ${observation.operationId} ${observation.source}`;
    const existing = this.#rows.get(rowKey);
    if (existing) {
      if (sameUsageObservation(existing.observation, observation, this.#marker))
        return Object.freeze({ status: "replayed", observation: existing.observation });
      throw new UsageObservationConflictError();
    }
    this.#rows.set(rowKey, { key, observation });
    return Object.freeze({ status: "recorded", observation });
  }

  async list(scope: Scope, query?: UsageInboxQuery): Promise<UsageInboxPage> {
    const q = normalizeUsageInboxQuery(scope, query);
    const sorted = [...this.#rows.values()]
      .filter(
        (r) =>
          r.key === q.key && (q.sessionId === undefined || r.observation.sessionId === q.sessionId),
      )
      .map((r) => r.observation)
      .sort((a, b) => compareKeys(usageObservationKey(a), usageObservationKey(b)));
    return pageOf(sorted, usageObservationKey, q.after, q.limit);
  }

  /** The session's observations kept under its mark (one session, or every session of the scope). */
  [ERASE](target: EraseTarget): number {
    for (const row of this.#rows.values()) {
      const id = row.observation.sessionId;
      if (!covers(target, row.key, id) || isErasedMark(id)) continue;
      row.observation = Object.freeze({ ...row.observation, sessionId: markOf(target, id) });
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#rows];
  }
}
