import type { Scope } from "../scope.js";
import type { AuditEvent, AuditLog, AuditQuery, AuditRecord, Trail } from "../stores/audit.js";
import { normalizeAuditEvent, TRAILS } from "./normalize.js";
import { closedObject, decodeCursor, PAGE, pageLimit, pageOf, scopeKey, validateOneOf } from "./rules.js";
import { validateId } from "../scope.js";

/** A validated audit query: filters, page size and the position after which to read. */
export function normalizeAuditQuery(query: unknown): {
  readonly sessionId?: string;
  readonly turnId?: string;
  readonly trail?: Trail;
  readonly after?: number;
  readonly limit: number;
} {
  const q = closedObject("query", query ?? {}, ["sessionId", "turnId", "trail", "cursor", "limit"]);
  const after = decodeCursor(q.cursor, ["number"]);
  return {
    ...(q.sessionId === undefined ? {} : { sessionId: validateId("sessionId", q.sessionId) }),
    ...(q.turnId === undefined ? {} : { turnId: validateId("turnId", q.turnId) }),
    ...(q.trail === undefined ? {} : { trail: validateOneOf("trail", q.trail, TRAILS) }),
    ...(after === undefined ? {} : { after: after[0] as number }),
    limit: pageLimit(q.limit, PAGE.audit.def, PAGE.audit.max),
  };
}

export type AuditFailure = Error | ((event: AuditEvent) => Error | undefined);

/**
 * Records every appended event, in order, as a frozen copy with its `seq`. `failAppends(error)`
 * (or the `fail` option) makes `append` reject before recording anything, to drive the engine's
 * "an audit failure makes the turn uncertain" path; `failAppends(undefined)` heals it.
 */
export class RecordingAuditLog implements AuditLog {
  /** Normalized events in append order: the one at index `i` has `seq` `i + 1`. */
  readonly #recorded: AuditEvent[] = [];
  /** Records (event plus `seq`) are made when first read, not on the append path, then kept. */
  readonly #records: AuditRecord[] = [];
  #fail: AuditFailure | undefined;

  constructor(opts: { readonly fail?: AuditFailure } = {}) {
    this.#fail = opts.fail;
  }

  /** Every recorded event, all scopes, in append order (for assertions). */
  get events(): readonly AuditRecord[] {
    return Object.freeze(this.#all().slice());
  }

  /** Recorded events of one trail, in append order. */
  trail<T extends Trail>(trail: T): readonly Extract<AuditRecord, { readonly trail: T }>[] {
    return Object.freeze(this.#all().filter((r): r is Extract<AuditRecord, { readonly trail: T }> => r.trail === trail));
  }

  failAppends(failure: AuditFailure | undefined): void {
    this.#fail = failure;
  }

  async append(event: AuditEvent): Promise<void> {
    const e = normalizeAuditEvent(event);
    const failure = typeof this.#fail === "function" ? this.#fail(e) : this.#fail;
    if (failure) throw failure;
    this.#recorded.push(e);
  }

  async query(scope: Scope, query?: AuditQuery): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const q = normalizeAuditQuery(query);
    const matching = this.#all().filter(
      (r) =>
        scopeKey(r.scope).key === key &&
        (q.sessionId === undefined || r.sessionId === q.sessionId) &&
        (q.turnId === undefined || r.turnId === q.turnId) &&
        (q.trail === undefined || r.trail === q.trail),
    );
    return Object.freeze(pageOf(matching, (r) => [r.seq], q.after === undefined ? undefined : [q.after], q.limit));
  }

  /** Every record, made (once) for the events not read before: `seq` is the 1-based append position. */
  #all(): readonly AuditRecord[] {
    const records = this.#records;
    for (let i = records.length; i < this.#recorded.length; i++) records.push(Object.freeze({ ...this.#recorded[i], seq: i + 1 }) as AuditRecord);
    return records;
  }
}
