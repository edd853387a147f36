import { AsyncLocalStorage } from "node:async_hooks";
import { type SessionMarker, StoreUnavailableError, sessionMarker } from "@alma-harness/core";
import type pg from "pg";
import {
  type Counter,
  codeOf,
  connectionLost,
  counted,
  mapPgError,
  type Queryable,
  queryAll,
  RETRYABLE_TX,
  RolledBack,
} from "./pg.js";
import { Unit } from "./unit.js";
import { inline } from "./literals.js";

export { inline } from "./literals.js";

/**
 * The one savepoint name a unit uses, only by a write that may undo itself (`undo`): a later one of
 * the same name hides it, and none is released (a release is a statement of its own, and a
 * savepoint costs nothing more for staying until the commit).
 */
const SP = "alma_w";
/** How many times a write is tried on a serialization failure or deadlock. */
export const ATTEMPTS = 4;

/**
 * The transaction discipline of one store set. `each`: every write is its own transaction (as the
 * contracts say). `grouped`: inside `unit(work)` writes join the unit's transaction and commit at
 * the durability points; outside a unit they stand alone, as in `each`. In a unit a write that fails
 * in the database loses the unit (every write since its last commit, as a lost connection does),
 * unless it may undo itself (`undo`: a savepoint before it); no savepoint per write (issue 26).
 */
export class PgDb {
  readonly grouped: boolean;
  readonly count: Counter = { roundTrips: 0, commits: 0 };
  readonly #pool: pg.Pool;
  readonly #units = new AsyncLocalStorage<Unit>();
  /** The mark an erased session's tombstones carry in this database (keyed when opened with a key). */
  readonly mark: SessionMarker;

  /** `pool`: the main pool, which units take their client from. */
  constructor(
    pool: pg.Pool,
    commits: "each" | "grouped" = "each",
    mark: SessionMarker = sessionMarker(),
  ) {
    this.#pool = pool;
    this.grouped = commits === "grouped";
    this.mark = mark;
  }

  /** The unit of the calling async context, while its `work` runs. */
  current(): Unit | undefined {
    const unit = this.#units.getStore();
    return unit && !unit.ended ? unit : undefined;
  }

  /**
   * Runs `work` as one unit: its writes share one transaction, committed at the durability points
   * and when `work` settles (either way). A unit inside a unit joins it. A failed final commit
   * rejects with `StoreUnavailableError`, even when `work` returned: its writes are lost.
   */
  async unit<T>(work: () => Promise<T>): Promise<T> {
    if (!this.grouped || this.current()) return work();
    const unit = new Unit();
    let out: T;
    try {
      out = await this.#units.run(unit, work);
    } catch (error) {
      await this.#end(unit).catch(() => {});
      throw error;
    }
    await this.#end(unit);
    return out;
  }

  #end(unit: Unit): Promise<void> {
    // From now on a call in this context stands alone; what was queued before still runs first.
    unit.ended = true;
    return unit.serial(() => this.#commit(unit));
  }

  /** The barrier: commits the current unit's transaction (a no-op outside a unit or with nothing pending). */
  async commit(): Promise<void> {
    const unit = this.current();
    if (unit) await unit.serial(() => this.#commit(unit));
  }

  async #commit(unit: Unit): Promise<void> {
    if (unit.poisoned) throw unit.poisoned;
    const client = unit.client;
    if (!client) return;
    try {
      const rows = await this.#flush(unit, client);
      this.count.roundTrips += 1;
      await client.query(rows ? `${rows}; COMMIT` : "COMMIT");
    } catch (error) {
      throw await this.#lose(unit, error);
    }
    this.count.commits += 1;
    unit.client = undefined;
    unit.locks.clear();
    unit.rows.clear();
    client.release();
  }

  /**
   * The unit's transaction is gone (a failed commit, a lost connection, a statement that aborted it
   * outside a savepoint): every write since the last commit is lost, and every later write or
   * commit of the unit is refused, so no turn goes on believing a write that is gone.
   */
  async #lose(unit: Unit, error: unknown): Promise<StoreUnavailableError> {
    const client = unit.client;
    unit.client = undefined;
    unit.locks.clear();
    unit.rows.clear();
    unit.deferred.clear();
    unit.poisoned ??= new StoreUnavailableError(
      "postgres: the unit's transaction failed; its writes since the last commit are lost",
      error,
    );
    if (client) {
      let broken = connectionLost(error);
      if (!broken) {
        this.count.roundTrips += 1;
        await client.query("ROLLBACK").catch(() => (broken = true));
      }
      client.release(broken);
    }
    return unit.poisoned;
  }

  /**
   * What a write's first round trip starts with: the unit's transaction begun (its client taken),
   * or, for a write that reads what they change (`late`), the waiting rows and late statements (a
   * failure of theirs aborts the unit's transaction, never only this write); then, for a write that
   * may undo itself (`undo`), a savepoint.
   */
  async #head(unit: Unit, late: boolean, undo: boolean): Promise<string> {
    const savepoint = undo ? `SAVEPOINT ${SP}` : undefined;
    if (unit.client) {
      let rows: string | undefined;
      try {
        // Waiting rows wait on through writes that read nothing they add (issue 26: a step's trail
        // rows go as one insert, with its commit or its next read).
        if (late) rows = await this.#flush(unit, unit.client);
      } catch (error) {
        throw await this.#lose(unit, error);
      }
      return [rows, savepoint].filter((x) => x).join("; ");
    }
    try {
      unit.client = await this.#pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    return savepoint ? `BEGIN; ${savepoint}` : "BEGIN";
  }

  /**
   * A write (`fn` on the unit's client) inside the unit's transaction; `late`: it reads what the late
   * statements change, so they go first (see `deferLate`). With `undo` it runs in a savepoint: a
   * `RolledBack` answer or a failure takes back its statements alone, and a serialization failure or
   * deadlock runs it again. Without, `fn` must not throw after a statement that wrote (its refusals
   * come first): a failure in the database loses the unit.
   */
  write<T>(
    unit: Unit,
    fn: (tx: Queryable) => Promise<T | RolledBack<T>>,
    opts: {
      readonly locks?: string;
      readonly late?: boolean;
      readonly undo?: boolean;
      /** Told the answer of a write that stood, in the unit's queue (before its next operation). */
      readonly stood?: (out: T) => void;
    } = {},
  ): Promise<T> {
    const undo = opts.undo === true;
    return unit.serial(async () => {
      if (unit.poisoned) throw unit.poisoned;
      let head = await this.#head(unit, opts.late === true, undo);
      const tx = counted(unit.client as pg.PoolClient, this.count);
      // A lock the transaction holds already is not taken again.
      const locks = (opts.locks?.split("; ") ?? []).filter((l) => l && !unit.locks.has(l));
      for (let attempt = 1; ; attempt++) {
        const riding = joinedQueryable(tx, [head, ...locks].filter((s) => s).join("; "));
        try {
          const result = await fn(riding.tx);
          await riding.rest();
          if (!(result instanceof RolledBack)) {
            for (const lock of locks) unit.locks.add(lock);
            opts.stood?.(result);
            return result;
          }
          if (!undo) throw new Error("postgres: a write without undo answered RolledBack");
          await tx.query(`ROLLBACK TO SAVEPOINT ${SP}`);
          return result.value;
        } catch (error) {
          const lost = connectionLost(error);
          // A refusal of the body's own (a typed error, no SQLSTATE) came before it wrote.
          if (!undo && !lost && codeOf(error) === undefined) throw error;
          if (!undo || lost) throw await this.#lose(unit, error);
          try {
            await tx.query(`ROLLBACK TO SAVEPOINT ${SP}`);
          } catch (rollback) {
            throw await this.#lose(unit, rollback);
          }
          // Rolled back to the savepoint: the write left nothing, so running it again cannot apply twice.
          const code = codeOf(error);
          if (code !== undefined && RETRYABLE_TX.has(code) && attempt < ATTEMPTS) {
            head = "";
            continue;
          }
          throw mapPgError(error);
        }
      }
    });
  }

  /**
   * Queues an append-only row (`batch`: an insert taking one array per column) for the unit's next
   * statement, in order with its other operations; false when the unit has no transaction open
   * (the caller writes the row on its own, which opens one).
   */
  defer(unit: Unit, batch: string, row: readonly (string | null)[]): Promise<boolean> {
    return this.#queue(unit, () => unit.deferred.add(batch, row));
  }

  /**
   * Queues a late statement (values inlined; it checks itself, nobody reads its answer): it goes
   * with the unit's commit, its next read, or its next write that reads what it changes (`late`),
   * after the waiting rows; false when the unit has no transaction open.
   */
  deferLate(
    unit: Unit,
    statement: string,
    replaces?: string,
    queued?: () => void,
  ): Promise<boolean> {
    return this.#queue(
      unit,
      () => {
        unit.deferred.addLate(statement, replaces);
        queued?.();
      },
      replaces,
    );
  }

  /**
   * `add` in order with the unit's operations, while its transaction is open (else false);
   * `held`: only while that transaction holds the row a store noted under this key (`rows`).
   */
  #queue(unit: Unit, add: () => void, held?: string): Promise<boolean> {
    return unit.serial(async () => {
      if (unit.poisoned) throw unit.poisoned;
      if (!unit.client) return false;
      if (held !== undefined && !unit.rows.has(held)) return false;
      add();
      return true;
    });
  }

  /**
   * Takes the unit's waiting rows: the statements whose values have no safe literal are sent now,
   * on `client`; the others are returned to ride in the caller's round trip.
   */
  async #flush(unit: Unit, client: pg.PoolClient): Promise<string | undefined> {
    if (unit.deferred.size === 0) return undefined;
    const { joined, apart } = unit.deferred.take();
    for (const { text, values } of apart) {
      this.count.roundTrips += 1;
      await client.query(text, values);
    }
    return joined;
  }

  /**
   * A read in a unit: on the unit's client, so it sees the unit's writes and the rows waiting for
   * its next statement (they ride in the read's round trip). A unit with no transaction open begins
   * it with the read (`BEGIN` in the same round trip): the turn's first read and its first writes
   * are one transaction, not a commit of their own (issue 26). A poisoned unit reads through
   * `fallback`, as a call standing alone.
   */
  read<R extends pg.QueryResultRow>(
    unit: Unit,
    text: string,
    values: readonly unknown[],
    fallback: () => Promise<pg.QueryResult<R>>,
  ): Promise<pg.QueryResult<R>> {
    return unit.serial(async () => {
      if (unit.poisoned) return fallback();
      let head: string | undefined;
      if (!unit.client) {
        try {
          unit.client = await this.#pool.connect();
        } catch (error) {
          throw mapPgError(error);
        }
        head = "BEGIN";
      }
      const client = unit.client;
      try {
        head ??= await this.#flush(unit, client);
        return await this.#joined<R>(client, head, text, values);
      } catch (error) {
        // A failed statement aborts the whole transaction.
        throw await this.#lose(unit, error);
      }
    });
  }

  /** `text` after `head` in one round trip when its values have a safe literal, else in two. */
  async #joined<R extends pg.QueryResultRow>(
    client: pg.PoolClient,
    head: string | undefined,
    text: string,
    values: readonly unknown[],
  ): Promise<pg.QueryResult<R>> {
    const statement =
      head === undefined ? undefined : values.length === 0 ? text : inline(text, values);
    if (head !== undefined && statement === undefined) {
      this.count.roundTrips += 1;
      await client.query(head);
    }
    this.count.roundTrips += 1;
    if (head === undefined || statement === undefined)
      return client.query<R>(text, values as unknown[]);
    const results = (await client.query<R>(`${head}; ${statement}`)) as
      | pg.QueryResult<R>
      | pg.QueryResult<R>[];
    return Array.isArray(results) ? (results[results.length - 1] as pg.QueryResult<R>) : results;
  }
}

/**
 * `tx` with `first` (a head: the unit's begin, waiting rows, a savepoint, locks) riding in the round
 * trip of the first statement run through it; `rest` sends it alone when none ran.
 */
function joinedQueryable(
  tx: Queryable,
  first: string,
): { readonly tx: Queryable; readonly rest: () => Promise<void> } {
  let pending: string | undefined = first || undefined;
  const joined: Queryable = {
    query: async <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => {
      const head = pending;
      pending = undefined;
      if (head === undefined) return tx.query<R>(text, values);
      const statement = values === undefined || values.length === 0 ? text : inline(text, values);
      if (statement === undefined) {
        await tx.query(head);
        return tx.query<R>(text, values);
      }
      const results = (await tx.query<R>(`${head}; ${statement}`)) as
        | pg.QueryResult<R>
        | pg.QueryResult<R>[];
      return Array.isArray(results) ? (results[results.length - 1] as pg.QueryResult<R>) : results;
    },
    queryAll: async (text: string, statements: number) => {
      const head = pending;
      pending = undefined;
      return queryAll(tx, head === undefined ? text : `${head}; ${text}`, statements);
    },
  };
  return {
    tx: joined,
    rest: async () => {
      if (pending !== undefined) await tx.query(pending);
      pending = undefined;
    },
  };
}
