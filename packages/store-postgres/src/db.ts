import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Scope,
  type SessionMarker,
  StoreUnavailableError,
  sessionMarker,
} from "@alma-harness/core";
import type pg from "pg";
import {
  atomic,
  type Counter,
  codeOf,
  connectionLost,
  counted,
  mapPgError,
  type Queryable,
  qualifier,
  queryAll,
  RETRYABLE_TX,
  RolledBack,
  schemaOf,
  transaction,
} from "./pg.js";
import { Unit } from "./unit.js";
import { inline } from "./literals.js";

export { inline } from "./literals.js";

/** The one savepoint name a unit uses: each write releases the previous one and opens its own. */
const SP = "alma_w";
const ATTEMPTS = 4;

/**
 * The transaction discipline of one store set. `each`: every write is its own transaction (as the
 * contracts say). `grouped`: inside `unit(work)` writes join the unit's transaction, each in its own
 * savepoint, and commit at the durability points; outside a unit they stand alone, as in `each`.
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

  /** A store's handle on `pool` (the main pool, or the root pool for root results). */
  on(pool: pg.Pool): Conn {
    return new Conn(this, pool);
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
   * or the previous savepoint released, with the rows waiting for this round trip in between the
   * savepoints (a failure of theirs aborts the unit's transaction, never only this write).
   */
  async #head(unit: Unit): Promise<string> {
    if (unit.client) {
      let rows: string | undefined;
      try {
        rows = await this.#flush(unit, unit.client);
      } catch (error) {
        throw await this.#lose(unit, error);
      }
      return [`RELEASE SAVEPOINT ${SP}`, rows, `SAVEPOINT ${SP}`].filter((x) => x).join("; ");
    }
    try {
      unit.client = await this.#pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    return `BEGIN; SAVEPOINT ${SP}`;
  }

  /** A write (`fn` on the unit's client) inside the unit's transaction, in its own savepoint. */
  write<T>(
    unit: Unit,
    fn: (tx: Queryable) => Promise<T | RolledBack<T>>,
    locks?: string,
  ): Promise<T> {
    return unit.serial(async () => {
      if (unit.poisoned) throw unit.poisoned;
      let head = await this.#head(unit);
      const tx = counted(unit.client as pg.PoolClient, this.count);
      for (let attempt = 1; ; attempt++) {
        // The savepoint (and the locks) ride in the round trip of the write's first statement.
        let pending: string | undefined = [head, locks].filter((s) => s).join("; ") || undefined;
        const joined: Queryable = {
          query: async <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => {
            const first = pending;
            pending = undefined;
            if (first === undefined) return tx.query<R>(text, values);
            const statement =
              values === undefined || values.length === 0 ? text : inline(text, values);
            if (statement === undefined) {
              await tx.query(first);
              return tx.query<R>(text, values);
            }
            const results = (await tx.query<R>(`${first}; ${statement}`)) as
              | pg.QueryResult<R>
              | pg.QueryResult<R>[];
            return Array.isArray(results)
              ? (results[results.length - 1] as pg.QueryResult<R>)
              : results;
          },
          queryAll: async (text: string, statements: number) => {
            const first = pending;
            pending = undefined;
            return queryAll(tx, first === undefined ? text : `${first}; ${text}`, statements);
          },
        };
        try {
          const result = await fn(joined);
          if (pending !== undefined) await tx.query(pending);
          if (result instanceof RolledBack) {
            await tx.query(`ROLLBACK TO SAVEPOINT ${SP}`);
            return result.value;
          }
          return result;
        } catch (error) {
          if (connectionLost(error)) throw await this.#lose(unit, error);
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
    return unit.serial(async () => {
      if (unit.poisoned) throw unit.poisoned;
      if (!unit.client) return false;
      unit.deferred.add(batch, row);
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

  /** A read on the unit's client when it has a transaction open or operations queued (it sees the unit's writes), else `fallback`. */
  read<R extends pg.QueryResultRow>(
    unit: Unit,
    text: string,
    values: readonly unknown[],
    fallback: () => Promise<pg.QueryResult<R>>,
  ): Promise<pg.QueryResult<R>> {
    if (!unit.client && unit.queued === 0) return fallback();
    return unit.serial(async () => {
      const client = unit.client;
      if (!client) return fallback();
      try {
        // The read sees the rows waiting for the unit's next statement.
        const rows = await this.#flush(unit, client);
        if (rows) {
          this.count.roundTrips += 1;
          await client.query(rows);
        }
        this.count.roundTrips += 1;
        return await client.query<R>(text, values as unknown[]);
      } catch (error) {
        // Outside a savepoint: a failed statement aborts the whole transaction.
        throw await this.#lose(unit, error);
      }
    });
  }
}

/** What a store runs its statements through: a pool, joined to the calling unit's transaction when there is one. */
export class Conn {
  readonly db: PgDb;
  readonly pool: pg.Pool;
  /** Names the package's tables with the pool's schema (`qualify`): no search_path is relied on. */
  readonly #q: (text: string) => string;

  constructor(db: PgDb, pool: pg.Pool) {
    this.db = db;
    this.pool = pool;
    this.#q = qualifier(schemaOf(pool));
  }

  /** The database's erased-session mark (`PgDb.mark`). */
  mark(scope: Scope, sessionId: string): string {
    return this.db.mark(scope, sessionId);
  }

  /** A read. */
  query<R extends pg.QueryResultRow>(
    sql: string,
    values: readonly unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    const text = this.#q(sql);
    const direct = async () => {
      this.db.count.roundTrips += 1;
      try {
        return await this.pool.query<R>(text, values as unknown[]);
      } catch (error) {
        throw mapPgError(error);
      }
    };
    const unit = this.db.current();
    return unit ? this.db.read(unit, text, values, direct) : direct();
  }

  /**
   * One self-contained write statement. Alone: its own transaction (with `retry`, retried on a
   * serialization failure or deadlock). In a unit: in a savepoint of the unit's transaction, after
   * `locks` (statements that run first, in the savepoint's round trip). `durable`: a durability point.
   */
  async write<R extends pg.QueryResultRow>(
    sql: string,
    values: readonly unknown[],
    opts: { readonly retry?: boolean; readonly locks?: string; readonly durable?: boolean } = {},
  ): Promise<pg.QueryResult<R>> {
    const text = this.#q(sql);
    const unit = this.db.current();
    if (!unit) {
      if (opts.retry) return atomic<R>(this.pool, text, values, ATTEMPTS, this.db.count);
      this.db.count.roundTrips += 1;
      try {
        const result = await this.pool.query<R>(text, values as unknown[]);
        this.db.count.commits += 1;
        return result;
      } catch (error) {
        throw mapPgError(error);
      }
    }
    const out = await this.db.write(unit, (tx) => tx.query<R>(text, values), opts.locks);
    if (opts.durable) await this.db.commit();
    return out;
  }

  /**
   * `fn` as one transaction (alone: `BEGIN` then `locks` in one round trip, `COMMIT`, retried on a
   * serialization failure or deadlock), or as one savepoint of the unit's. Returning a
   * `RolledBack` undoes it and answers its value.
   */
  async transaction<T>(
    body: (tx: Queryable) => Promise<T | RolledBack<T>>,
    opts: { readonly locks?: string; readonly durable?: boolean } = {},
  ): Promise<T> {
    const q = this.#q;
    const fn = (tx: Queryable) =>
      body({
        query: <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) =>
          tx.query<R>(q(text), values),
        queryAll: (text: string, statements: number) => queryAll(tx, q(text), statements),
      });
    const unit = this.db.current();
    if (!unit)
      return transaction(this.pool, fn, {
        begin: opts.locks ? `BEGIN; ${opts.locks}` : "BEGIN",
        count: this.db.count,
      });
    const out = await this.db.write(unit, fn, opts.locks);
    if (opts.durable) await this.db.commit();
    return out;
  }

  /**
   * One append-only row. In a unit with its transaction open it waits for the unit's next
   * statement (a write, a read, the commit) and goes with the rows of the same `batch` as one
   * multi-row insert in that round trip; otherwise `single` is written now (`write`).
   */
  async append(
    single: string,
    values: readonly unknown[],
    batch: string,
    row: readonly (string | null)[],
  ): Promise<void> {
    const unit = this.db.current();
    if (unit && (await this.db.defer(unit, this.#q(batch), row))) return;
    await this.write(single, values);
  }

  /** A durability point after a write made in parts: commits the unit's transaction (a no-op alone). */
  commit(): Promise<void> {
    return this.db.commit();
  }
}

/** A store's handle: a `Conn`, or a bare pool (its own store set of one, `each` mode). */
export function asConn(pool: pg.Pool | Conn): Conn {
  return pool instanceof Conn ? pool : new PgDb(pool).on(pool);
}
