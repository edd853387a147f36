import type { Scope } from "@alma-harness/core";
import type pg from "pg";
import { ATTEMPTS, PgDb } from "./db.js";
import { inline } from "./literals.js";
import {
  atomic,
  mapPgError,
  type Queryable,
  qualifier,
  queryAll,
  type RolledBack,
  schemaOf,
  transaction,
} from "./pg.js";

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
   * serialization failure or deadlock). In a unit: in the unit's transaction, after `locks`
   * (statements that run first, in its round trip); a failure loses the unit. `durable`: a
   * durability point.
   */
  async write<R extends pg.QueryResultRow>(
    sql: string,
    values: readonly unknown[],
    opts: {
      readonly retry?: boolean;
      readonly locks?: string;
      readonly durable?: boolean;
      /** In a unit, told the answer in the unit's queue, before its next operation (`transaction`). */
      readonly stood?: (out: pg.QueryResult<R>) => void;
    } = {},
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
    const out = await this.db.write(unit, (tx) => tx.query<R>(text, values), {
      ...(opts.locks ? { locks: opts.locks } : {}),
      late: opts.durable === true,
      ...(opts.stood ? { stood: opts.stood } : {}),
    });
    if (opts.durable) await this.db.commit();
    return out;
  }

  /**
   * `fn` as one transaction (alone: `BEGIN` then `locks` in one round trip, `COMMIT`, retried on a
   * serialization failure or deadlock), or as part of the unit's. Returning a `RolledBack` undoes
   * it and answers its value. In a unit it runs in a savepoint of the unit's, so that a refusal
   * after a statement that wrote takes back its statements alone; a body whose refusals all come
   * before its writes says `undo: false` and saves that statement (its failure in the database then
   * loses the unit).
   */
  async transaction<T>(
    body: (tx: Queryable) => Promise<T | RolledBack<T>>,
    opts: {
      readonly locks?: string;
      readonly durable?: boolean;
      readonly reads?: "spend";
      readonly undo?: boolean;
      /**
       * In a unit, told the answer when the body stood (not taken back), before the unit's next
       * operation: where a store notes what the open transaction now holds (`noteUnfenced`).
       */
      readonly stood?: (out: T) => void;
    } = {},
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
    // A durability point (an erasure, a sweep) takes the late statements first: it commits anyway.
    const late = opts.reads === "spend" || opts.durable === true;
    const out = await this.db.write(unit, fn, {
      ...(opts.locks ? { locks: opts.locks } : {}),
      late,
      undo: opts.undo !== false,
      ...(opts.stood ? { stood: opts.stood } : {}),
    });
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

  /**
   * What a store noted of a row the unit's open transaction wrote (`holdRow`): the row stays locked
   * to the transaction's end, so nobody else changes it meanwhile. Undefined outside a unit, or
   * once the transaction ended.
   */
  heldRow<R>(key: string): R | undefined {
    const unit = this.db.current();
    return unit?.client ? (unit.rows.get(key) as R | undefined) : undefined;
  }

  /**
   * Notes a row the unit's open transaction wrote (a no-op outside a unit): call it from the
   * write's `stood`, in the unit's queue, so it never lands in a transaction begun after the write's.
   */
  holdRow<R>(key: string, row: R): void {
    const unit = this.db.current();
    if (unit?.client && !unit.poisoned) unit.rows.set(key, row);
  }

  /**
   * Whether the unit's open transaction read that no fence covers `scopeKey` while holding the
   * tenant's fence lock (shared), which it holds to its end: a fence needs that lock exclusive, so
   * none can cover the scope before the commit (`noteUnfenced`).
   */
  knownUnfenced(scopeKey: string): boolean {
    return this.heldRow<boolean>(`unfenced:${scopeKey}`) === true;
  }

  /**
   * Notes that a write that took the tenant's fence lock read no fence: call it from the write's
   * `stood`, so it lands in the transaction that holds the lock.
   */
  noteUnfenced(scopeKey: string): void {
    this.holdRow(`unfenced:${scopeKey}`, true);
  }

  /** Whether this call runs inside a grouped unit (its writes share the unit's transaction). */
  inUnit(): boolean {
    return this.db.current() !== undefined;
  }

  /**
   * A statement nobody waits for the answer of, in a unit: it goes, after `locks`, with the unit's
   * commit, its next read or its next write that reads what it changes (`reads: "spend"`), so what
   * it locks is held from then to the commit, never across host code before it. With no
   * transaction open, or values with no safe literal, it is written now. `replaces`: the key a
   * store noted a held row under (`holdRow`); a late statement still waiting under it is replaced
   * by this one, and when the transaction no longer holds that row nothing is written and the
   * answer is false (the caller writes the change as a plain write). `queued`: told in the unit's
   * queue when the statement waits (where the store notes the row's new state).
   */
  async later(
    sql: string,
    values: readonly unknown[],
    locks?: string,
    replaces?: string,
    queued?: () => void,
  ): Promise<boolean> {
    const unit = this.db.current();
    const statement = inline(this.#q(sql), values);
    if (unit && statement !== undefined) {
      const text = locks ? `${locks}; ${statement}` : statement;
      if (await this.db.deferLate(unit, text, replaces, queued)) return true;
    }
    // A keyed statement stands for a row the transaction held: with that transaction gone, the
    // caller writes the change itself.
    if (replaces !== undefined) return false;
    await this.write(sql, values, { retry: true, ...(locks ? { locks } : {}) });
    return true;
  }

  /** A durability point after a write made in parts: commits the unit's transaction (a no-op alone). */
  commit(): Promise<void> {
    return this.db.commit();
  }
}

/** A store's handle: a `Conn`, or a bare pool (its own store set of one, `each` mode). */
export function asConn(pool: pg.Pool | Conn): Conn {
  if (pool instanceof Conn) return pool;
  return new Conn(new PgDb(pool), pool);
}
