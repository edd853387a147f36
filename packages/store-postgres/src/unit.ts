import type { StoreUnavailableError } from "@alma-harness/core";
import type pg from "pg";
import { DeferredRows } from "./deferred.js";

/**
 * One turn's writes (`commits: "grouped"`): a client of the main pool, taken at the first write, in
 * one open transaction until the next durability point. Operations on it are serialized (the
 * turn's parallel tool children share the async context): a promise queue, so two writes never
 * interleave.
 */
export class Unit {
  client: pg.PoolClient | undefined;
  /** Operations queued or running on the unit's client. */
  queued = 0;
  /** Set when `work` settled: later calls in this async context run alone, as outside a unit. */
  ended = false;
  poisoned: StoreUnavailableError | undefined;
  /**
   * The lock statements (`pg_advisory_xact_lock…`) the open transaction has taken outside any
   * savepoint rolled back since: held to its end, so a later write does not take them again.
   */
  readonly locks = new Set<string>();
  /** Rows the open transaction wrote, as the stores noted them (`Conn.holdRow`). */
  readonly rows = new Map<string, unknown>();
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
