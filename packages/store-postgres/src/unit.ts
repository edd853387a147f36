import type { StoreUnavailableError } from "@alma-harness/core";
import type pg from "pg";
import { DeferredRows } from "./deferred.js";

/**
 * One turn's writes (`commits: "grouped"`): a client of the main pool, taken at the first write, in
 * one open transaction until the next durability point. Operations on it are serialized (the
 * turn's parallel tool children share the async context): a promise queue, so two writes never
 * interleave inside one savepoint.
 */
export class Unit {
  client: pg.PoolClient | undefined;
  /** Whether the open transaction has the unit's savepoint (a transaction a read began has none yet). */
  savepoint = false;
  /** Operations queued or running on the unit's client. */
  queued = 0;
  /** Set when `work` settled: later calls in this async context run alone, as outside a unit. */
  ended = false;
  poisoned: StoreUnavailableError | undefined;
  /** Append-only rows waiting for the unit's next statement (its transaction open). */
  readonly deferred = new DeferredRows();
  #tail: Promise<unknown> = Promise.resolve();

  serial<T>(fn: () => Promise<T>): Promise<T> {
    this.queued += 1;
    const next = this.#tail.then(fn).finally(() => {
      this.queued -= 1;
    });
    this.#tail = next.catch(() => {});
    return next;
  }
}
