import { InMemoryAuditLog } from "../memory/audit.js";
import type { AuditEvent, AuditRecord, Trail } from "../stores/audit.js";

export type AuditFailure = Error | ((event: AuditEvent) => Error | undefined);

/**
 * The in-memory audit log, for assertions: `events` and `trail(name)` read what was recorded, all
 * scopes, in append order. `failAppends(error)` (or the `fail` option) makes `append` reject before
 * recording anything, to drive the engine's "an audit failure makes the turn uncertain" path;
 * `failAppends(undefined)` heals it.
 */
export class RecordingAuditLog extends InMemoryAuditLog {
  #fail: AuditFailure | undefined;

  constructor(opts: { readonly fail?: AuditFailure } = {}) {
    super();
    this.#fail = opts.fail;
  }

  /** Every recorded event, all scopes, in append order (for assertions). */
  get events(): readonly AuditRecord[] {
    return Object.freeze(this.records().slice());
  }

  /** Recorded events of one trail, in append order. */
  trail<T extends Trail>(trail: T): readonly Extract<AuditRecord, { readonly trail: T }>[] {
    return Object.freeze(
      this.records().filter(
        (r): r is Extract<AuditRecord, { readonly trail: T }> => r.trail === trail,
      ),
    );
  }

  failAppends(failure: AuditFailure | undefined): void {
    this.#fail = failure;
  }

  protected override admit(event: AuditEvent): void {
    const failure = typeof this.#fail === "function" ? this.#fail(event) : this.#fail;
    if (failure) throw failure;
  }
}
