import { createHash } from "node:crypto";
import {
  AlmaError,
  ConflictError,
  StoreUnavailableError,
  ValidationError,
} from "@alma-harness/core";
import type pg from "pg";
import { isDatabaseError, pgDriver } from "./driver.js";
import { inline } from "./literals.js";

/** What a store needs to run one statement: a pool, or the client of an open transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
  /**
   * `text`'s statements (no parameters; each its own snapshot under READ COMMITTED) in one round
   * trip, answering the results of its last `statements` (a unit's head rides before them).
   */
  queryAll?(text: string, statements: number): Promise<pg.QueryResult[]>;
}

/** `text`'s statements in one round trip (`Queryable.queryAll`, or a plain multi-statement query). */
export async function queryAll(
  tx: Queryable,
  text: string,
  statements: number,
): Promise<pg.QueryResult[]> {
  if (tx.queryAll) return tx.queryAll(text, statements);
  const out = (await tx.query(text)) as pg.QueryResult | pg.QueryResult[];
  return (Array.isArray(out) ? out : [out]).slice(-statements);
}

/** A statement and its values. */
export type Statement = readonly [text: string, values: readonly unknown[]];

/**
 * `statements` in order, in one round trip when every value has a safe literal (a simple-protocol
 * query of several statements, each with its own snapshot under READ COMMITTED), else one round
 * trip each: their results, in order.
 */
export async function queryEach(
  tx: Queryable,
  statements: readonly Statement[],
): Promise<pg.QueryResult[]> {
  const texts = statements.map(([text, values]) => inline(text, values));
  if (texts.every((t): t is string => t !== undefined))
    return queryAll(tx, texts.join("; "), statements.length);
  const out: pg.QueryResult[] = [];
  for (const [text, values] of statements) out.push(await tx.query(text, values));
  return out;
}

/** A locking read, then statements that need nothing read before them, in one round trip (`queryEach`). */
export async function lockedThen<R extends pg.QueryResultRow>(
  tx: Queryable,
  text: string,
  values: readonly unknown[],
  ...then: readonly Statement[]
): Promise<{ readonly rows: R[]; readonly fenced: false; readonly after: pg.QueryResult[] }> {
  const [locked, ...after] = await queryEach(tx, [[text, values], ...then]);
  return { rows: (locked?.rows ?? []) as R[], fenced: false, after };
}

const SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;

/** A schema name we interpolate into SQL: lower-case identifier characters only. */
export function validateSchema(name: unknown, field = "schema"): string {
  if (typeof name !== "string" || !SCHEMA.test(name)) {
    throw new ValidationError(field, "schema_name", `${field} must match ${SCHEMA}`);
  }
  return name;
}

/** int8 as a JS number: every int8 we store is a safe integer (epoch ms, micro-dollars, seq). */
const INT8_OID = 20;
const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID
      ? (value: string) => Number(value)
      : pgDriver().types.getTypeParser(
          oid,
          format ?? "text",
        )) as pg.CustomTypesConfig["getTypeParser"],
};

/** The schema a pool's statements name their tables with (see `schemaPool`). */
const POOL_SCHEMA = Symbol("alma.schema");

/**
 * A pool whose statements name this package's tables with `schema` (`qualify`): no session state,
 * no `search_path` startup option, so it works behind PgBouncer in transaction pooling mode.
 */
export function schemaPool(config: pg.PoolConfig, schema: string): pg.Pool {
  const pool = new (pgDriver().Pool)({ ...config, types });
  Object.defineProperty(pool, POOL_SCHEMA, { value: validateSchema(schema) });
  // An idle client that dies (a restarted server, a terminated backend) must not crash the host.
  pool.on("error", () => {});
  return pool;
}

/** The schema `schemaPool` gave a pool (none for a pool made otherwise: its names stay as written). */
export function schemaOf(pool: pg.Pool): string | undefined {
  return (pool as unknown as Record<symbol, string | undefined>)[POOL_SCHEMA];
}

/** Every table the migrations create (main and root schema alike). */
const TABLES = [
  "admissions",
  "audit_events",
  "execution",
  "memory_episodes",
  "memory_facts",
  "messages",
  "model_job_items",
  "model_jobs",
  "parked_asks",
  "parked_outputs",
  "parked_turns",
  "results",
  "routine_runs",
  "routines",
  "scope_fences",
  "sealed_label_scopes",
  "session_labels",
  "sessions",
  "settlement_obligations",
  "settlements",
  "spend_reservations",
  "spend_sessions",
  "spend_tenant_days",
  "usage_inbox",
];
const NAMED = new RegExp(
  `\\b(FROM|INTO|UPDATE|JOIN|USING)(\\s+)(${TABLES.join("|")})\\b(?!\\.)`,
  "gi",
);
const MEMO_MAX = 2_000;

/**
 * A statement's table names qualified with `schema` (`FROM admissions` → `FROM s.admissions`),
 * each text rewritten once and remembered. The package's SQL names its tables bare after `FROM`,
 * `INTO`, `UPDATE`, `JOIN` or `USING`; a name already qualified, a CTE or a column is left alone.
 * Without a schema the text is returned as it is.
 */
export function qualifier(schema: string | undefined): (text: string) => string {
  if (schema === undefined) return (text) => text;
  const memo = new Map<string, string>();
  return (text) => {
    let out = memo.get(text);
    if (out === undefined) {
      out = text.replace(NAMED, (_, kw: string, gap: string, table: string) => {
        return `${kw}${gap}${schema}.${table}`;
      });
      if (memo.size >= MEMO_MAX) memo.clear();
      memo.set(text, out);
    }
    return out;
  };
}

export const RETRYABLE_TX = new Set(["40001", "40P01"]);

export function codeOf(error: unknown): string | undefined {
  return isDatabaseError(error) ? error.code : undefined;
}

/** Whether the connection itself failed (its client must be discarded, never reused). */
export function connectionLost(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined) return code.startsWith("08") || code.startsWith("57P");
  return error instanceof Error && !(error instanceof AlmaError);
}

/** Driver failures as contract errors: never a raw SQLSTATE or socket error to the caller. */
export function mapPgError(error: unknown): unknown {
  if (error instanceof AlmaError) return error;
  const code = codeOf(error);
  if (code === "23505")
    return new ConflictError("store_conflict", "the write conflicts with a stored record");
  if (code !== undefined && RETRYABLE_TX.has(code)) {
    return new StoreUnavailableError(
      "the transaction kept conflicting with concurrent ones",
      error,
    );
  }
  const detail =
    code === undefined
      ? error instanceof Error
        ? error.message
        : String(error)
      : `SQLSTATE ${code}`;
  return new StoreUnavailableError(`postgres: ${detail}`, error);
}

/** One statement outside a transaction, mapping failures. */
export async function run<R extends pg.QueryResultRow>(
  db: Queryable,
  text: string,
  values: readonly unknown[] = [],
): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(text, values);
  } catch (error) {
    throw mapPgError(error);
  }
}

/**
 * One statement outside a transaction (its own atomic commit), retried like `transaction` when it
 * hit a serialization failure or deadlock: such a statement was rolled back whole, so running it
 * again cannot apply anything twice. A lost connection is never retried.
 */
export async function atomic<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: readonly unknown[],
  attempts = 4,
  count?: Counter,
): Promise<pg.QueryResult<R>> {
  for (let attempt = 1; ; attempt++) {
    try {
      if (count) count.roundTrips += 1;
      const result = await pool.query<R>(text, values as unknown[]);
      if (count) count.commits += 1;
      return result;
    } catch (error) {
      const code = codeOf(error);
      if (code !== undefined && RETRYABLE_TX.has(code) && attempt < attempts) continue;
      throw mapPgError(error);
    }
  }
}

/** What a store set counts: statements sent (round trips) and transactions committed. */
export interface Counter {
  roundTrips: number;
  commits: number;
}

/** `client` with every statement counted as one round trip. */
export function counted(client: Queryable, count: Counter | undefined): Queryable {
  if (!count) return client;
  return {
    query: <R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]) => {
      count.roundTrips += 1;
      return values === undefined ? client.query<R>(text) : client.query<R>(text, values);
    },
  };
}

/** What `fn` returns to end its transaction with ROLLBACK and still answer `value` (a refusal that wrote nothing). */
export class RolledBack<T> {
  readonly value: T;

  constructor(value: T) {
    this.value = value;
  }
}

/**
 * Runs `fn` in one READ COMMITTED transaction on one client. Anything thrown rolls it back, and so
 * does returning a `RolledBack`. `begin` replaces the plain `BEGIN`: a simple-protocol string that
 * starts with `BEGIN;` and runs more parameterless statements in the same round trip (the
 * reservation locks). A serialization failure or deadlock (nothing committed) is retried a few
 * times; a lost connection is never retried here, since a COMMIT whose answer was lost may have
 * landed. A client whose connection failed is destroyed, not returned to the pool.
 */
export async function transaction<T>(
  pool: pg.Pool,
  fn: (tx: Queryable) => Promise<T | RolledBack<T>>,
  opts: { readonly begin?: string; readonly attempts?: number; readonly count?: Counter } = {},
): Promise<T> {
  const attempts = opts.attempts ?? 4;
  for (let attempt = 1; ; attempt++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    let broken = false;
    const tx = counted(client, opts.count);
    try {
      await tx.query(opts.begin ?? "BEGIN");
      const result = await fn(tx);
      if (result instanceof RolledBack) {
        await tx.query("ROLLBACK");
        return result.value;
      }
      await tx.query("COMMIT");
      if (opts.count) opts.count.commits += 1;
      return result;
    } catch (error) {
      broken = connectionLost(error);
      if (!broken) await tx.query("ROLLBACK").catch(() => (broken = true));
      const code = codeOf(error);
      if (!broken && code !== undefined && RETRYABLE_TX.has(code) && attempt < attempts) continue;
      throw mapPgError(error);
    } finally {
      client.release(broken);
    }
  }
}

/**
 * A transaction advisory-lock key for `parts` (joined with NUL, which no id or schema name
 * contains): the first 8 bytes of their SHA-256 as a signed int64, in decimal. Computed here, not by
 * `hashtextextended` in SQL, so the key is a numeric literal that can ride in the `BEGIN` round trip.
 */
export function lockKey(...parts: readonly string[]): string {
  return createHash("sha256").update(parts.join("\0")).digest().readBigInt64BE(0).toString();
}

/**
 * The reservation locks of one spend key, tenant-day first, then session: the one order every spend
 * writer takes. One statement: a select list's calls run left to right.
 */
export function spendLocks(
  schema: string,
  org: string,
  day: string,
  scope: string,
  sessionId: string,
): string {
  const dayKey = lockKey(schema, "spend-day", org, day);
  const sessionKey = lockKey(schema, "spend-session", scope, sessionId);
  return `SELECT pg_advisory_xact_lock(${dayKey}), pg_advisory_xact_lock(${sessionKey})`;
}
