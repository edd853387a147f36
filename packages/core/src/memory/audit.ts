import type { Scope } from "../scope.js";
import type { AuditEvent, AuditLog, AuditQuery, AuditRecord } from "../stores/audit.js";
import { normalizeAuditEvent, normalizeAuditQuery } from "../stores/normalize.js";
import { pageOf, scopeKey } from "../stores/rules.js";
import { ERASE, type Erasable, type EraseTarget, MEMORY_STATE } from "./erase.js";

/**
 * The audit log in memory: every appended event, normalized, in append order, each with its `seq`
 * (the 1-based append position). Volatile, and it grows with every event: for tests, demos and
 * single-process hosts that keep no audit beyond the process.
 */
export class InMemoryAuditLog implements AuditLog, Erasable {
  /** Normalized events in append order: the one at index `i` has `seq` `i + 1` (an erased one is a hole). */
  readonly #recorded: (AuditEvent | undefined)[] = [];
  /** Records (event plus `seq`) are made when first read, not on the append path, then kept. */
  readonly #records: (AuditRecord | undefined)[] = [];
  /** Events erased so far: while 0, `records` has no hole to skip. */
  #holes = 0;

  async append(event: AuditEvent): Promise<void> {
    const e = normalizeAuditEvent(event);
    this.admit(e);
    this.#recorded.push(e);
  }

  async query(
    scope: Scope,
    query?: AuditQuery,
  ): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const q = normalizeAuditQuery(query);
    const matching = this.records().filter(
      (r) =>
        scopeKey(r.scope).key === key &&
        (q.sessionId === undefined || r.sessionId === q.sessionId) &&
        (q.turnId === undefined || r.turnId === q.turnId) &&
        (q.trail === undefined || r.trail === q.trail),
    );
    return Object.freeze(
      pageOf(matching, (r) => [r.seq], q.after === undefined ? undefined : [q.after], q.limit),
    );
  }

  /** Called with each normalized event before it is recorded; a throw rejects the append and records nothing. */
  protected admit(_event: AuditEvent): void {}

  /** Every record, all scopes, in append order (made once for the events not read before); erased ones are gone. */
  protected records(): readonly AuditRecord[] {
    const records = this.#records;
    for (let i = records.length; i < this.#recorded.length; i++) {
      const event = this.#recorded[i];
      records.push(
        event === undefined ? undefined : (Object.freeze({ ...event, seq: i + 1 }) as AuditRecord),
      );
    }
    return this.#holes === 0
      ? (records as readonly AuditRecord[])
      : records.filter((r): r is AuditRecord => r !== undefined);
  }

  /** Removes the target's events (one session: those whose stored `sessionId` is the target's audit value); their `seq` is never reused. */
  [ERASE](target: EraseTarget): number {
    for (let i = 0; i < this.#recorded.length; i++) {
      const event = this.#recorded[i];
      if (event === undefined || scopeKey(event.scope).key !== target.key) continue;
      if (target.session && event.sessionId !== target.session.audit) continue;
      this.#recorded[i] = undefined;
      if (i < this.#records.length) this.#records[i] = undefined;
      this.#holes += 1;
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#recorded, this.#records];
  }
}
