import type { Scope } from "../scope.js";
import {
  type ErasureReport,
  type SessionErasure,
  type SessionMarker,
  sessionMarker,
} from "../stores/erasure.js";
import { scopeKey } from "../stores/rules.js";
import { validateId } from "../scope.js";

/** One erasure as every in-memory store applies it: one session of a scope, or the whole scope. */
export interface EraseTarget {
  readonly scope: Scope;
  /** The scope's key, as the stores key their rows. */
  readonly key: string;
  /** One session (its id, its tombstone mark, the audit trail's stored value for it); absent: every session of the scope. */
  readonly session?: { readonly id: string; readonly mark: string; readonly audit: string };
  /** How the store set marks an erased session (its key's `erasedSessionMark`). */
  readonly marker: SessionMarker;
}

/** How the in-memory erasure reaches each store's rows (internal to `core/memory`, not exported by the package). */
export const ERASE: unique symbol = Symbol("alma.memory.erase");

/** A store the in-memory erasure can apply a target to, synchronously; it returns the admissions it fenced (0 but for admissions). */
export interface Erasable {
  [ERASE](target: EraseTarget): number;
}

/**
 * A read-only view of an in-memory store's state (its maps, sets and arrays, as they are), for a
 * test that walks every value the store holds (the erasure contract's deep scan). Not behaviour:
 * nothing in the stores reads it.
 */
export const MEMORY_STATE: unique symbol = Symbol.for("alma.memory.state");

/** Whether `target` covers the session `sessionId` of the scope keyed `key`. */
export function covers(target: EraseTarget, key: string, sessionId: string): boolean {
  return key === target.key && (target.session === undefined || target.session.id === sessionId);
}

/** The mark `sessionId`'s tombstones and receipts carry under `target`. */
export function markOf(target: EraseTarget, sessionId: string): string {
  return target.session?.mark ?? target.marker(target.scope, sessionId);
}

/**
 * Erasure over one linked set of in-memory stores: every store's rows in one synchronous step (no
 * other call interleaves), so it is atomic, and idempotent as the contract says.
 */
export class InMemoryErasure implements SessionErasure {
  readonly #stores: readonly Erasable[];
  readonly #marker: SessionMarker;

  constructor(stores: readonly Erasable[], marker: SessionMarker = sessionMarker()) {
    this.#stores = Object.freeze([...stores]);
    this.#marker = marker;
  }

  async eraseSession(
    scope: Scope,
    sessionId: string,
    opts: { readonly auditSessionId: string },
  ): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const audit = validateId("auditSessionId", opts?.auditSessionId);
    return this.#apply({
      scope: s,
      key,
      session: { id, mark: this.#marker(s, id), audit },
      marker: this.#marker,
    });
  }

  async eraseScope(scope: Scope): Promise<ErasureReport> {
    const { scope: s, key } = scopeKey(scope);
    return this.#apply({ scope: s, key, marker: this.#marker });
  }

  #apply(target: EraseTarget): ErasureReport {
    let fencedAdmissions = 0;
    for (const store of this.#stores) fencedAdmissions += store[ERASE](target);
    return Object.freeze({ fencedAdmissions });
  }
}
