import type { Scope } from "../scope.js";
import type { AuditEvent, AuditLog, AuditQuery, AuditRecord } from "../stores/audit.js";
import { normalizeAuditEvent, normalizeAuditQuery } from "../stores/normalize.js";
import { pageOf, scopeKey } from "../stores/rules.js";

/**
 * The audit log in memory: every appended event, normalized, in append order, each with its `seq`
 * (the 1-based append position). Volatile, and it grows with every event: for tests, demos and
 * single-process hosts that keep no audit beyond the process.
 */
export class InMemoryAuditLog implements AuditLog {
  /** Normalized events in append order: the one at index `i` has `seq` `i + 1`. */
  readonly #recorded: AuditEvent[] = [];
  /** Records (event plus `seq`) are made when first read, not on the append path, then kept. */
  readonly #records: AuditRecord[] = [];

  async append(event: AuditEvent): Promise<void> {
    const e = normalizeAuditEvent(event);
    this.admit(e);
    this.#recorded.push(e);
  }

  async query(scope: Scope, query?: AuditQuery): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const q = normalizeAuditQuery(query);
    const matching = this.records().filter(
      (r) =>
        scopeKey(r.scope).key === key &&
        (q.sessionId === undefined || r.sessionId === q.sessionId) &&
        (q.turnId === undefined || r.turnId === q.turnId) &&
        (q.trail === undefined || r.trail === q.trail),
    );
    return Object.freeze(pageOf(matching, (r) => [r.seq], q.after === undefined ? undefined : [q.after], q.limit));
  }

  /** Called with each normalized event before it is recorded; a throw rejects the append and records nothing. */
  protected admit(_event: AuditEvent): void {}

  /** Every record, all scopes, in append order (made once for the events not read before). */
  protected records(): readonly AuditRecord[] {
    const records = this.#records;
    for (let i = records.length; i < this.#recorded.length; i++) records.push(Object.freeze({ ...this.#recorded[i], seq: i + 1 }) as AuditRecord);
    return records;
  }
}
