import { AlmaError, ConflictError, type Scope, StoreUnavailableError, ValidationError } from "@alma-harness/core";
import pg from "pg";

/** The record format of every JSON column this build writes; reading another is refused, never guessed. */
export const RECORD_VERSION = 1;

/** What a store needs to run one statement: a pool, or the client of an open transaction. */
export interface Queryable {
  query<R extends pg.QueryResultRow>(text: string, values?: readonly unknown[]): Promise<pg.QueryResult<R>>;
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
    oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format ?? "text")) as pg.CustomTypesConfig["getTypeParser"],
};

/** A pool whose sessions resolve unqualified names in `schema` alone (pg_catalog aside). */
export function schemaPool(config: pg.PoolConfig, schema: string): pg.Pool {
  const pool = new pg.Pool({ ...config, options: `-c search_path=${validateSchema(schema)}`, types });
  // An idle client that dies (a restarted server, a terminated backend) must not crash the host.
  pool.on("error", () => {});
  return pool;
}

const RETRYABLE_TX = new Set(["40001", "40P01"]);

function codeOf(error: unknown): string | undefined {
  return error instanceof pg.DatabaseError ? error.code : undefined;
}

/** Whether the connection itself failed (its client must be discarded, never reused). */
function connectionLost(error: unknown): boolean {
  const code = codeOf(error);
  if (code !== undefined) return code.startsWith("08") || code.startsWith("57P");
  return error instanceof Error && !(error instanceof AlmaError);
}

/** Driver failures as contract errors: never a raw SQLSTATE or socket error to the caller. */
export function mapPgError(error: unknown): unknown {
  if (error instanceof AlmaError) return error;
  const code = codeOf(error);
  if (code === "23505") return new ConflictError("store_conflict", "the write conflicts with a stored record");
  if (code !== undefined && RETRYABLE_TX.has(code)) {
    return new StoreUnavailableError("the transaction kept conflicting with concurrent ones", error);
  }
  const detail = code === undefined ? (error instanceof Error ? error.message : String(error)) : `SQLSTATE ${code}`;
  return new StoreUnavailableError(`postgres: ${detail}`, error);
}

/** One statement outside a transaction, mapping failures. */
export async function run<R extends pg.QueryResultRow>(db: Queryable, text: string, values: readonly unknown[] = []): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(text, values);
  } catch (error) {
    throw mapPgError(error);
  }
}

/**
 * Runs `fn` in one READ COMMITTED transaction on one client. Anything thrown rolls it back. A
 * serialization failure or deadlock (nothing committed) is retried a few times; a lost connection
 * is never retried here, since a COMMIT whose answer was lost may have landed. A client whose
 * connection failed is destroyed, not returned to the pool.
 */
export async function transaction<T>(pool: pg.Pool, fn: (tx: Queryable) => Promise<T>, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    let broken = false;
    try {
      await client.query("BEGIN");
      const result = await fn(client);
      await client.query("COMMIT");
      return result;
    } catch (error) {
      broken = connectionLost(error);
      if (!broken) await client.query("ROLLBACK").catch(() => (broken = true));
      const code = codeOf(error);
      if (!broken && code !== undefined && RETRYABLE_TX.has(code) && attempt < attempts) continue;
      throw mapPgError(error);
    } finally {
      client.release(broken);
    }
  }
}

/** `org/uid` back to a frozen scope. */
export function scopeFrom(key: string): Scope {
  const slash = key.indexOf("/");
  return Object.freeze({ org: key.slice(0, slash), uid: key.slice(slash + 1) });
}

/** Parses a versioned JSON column into a deep-frozen value; an unknown version is refused. */
export function decodeJson<T>(version: number, text: string): T {
  if (version !== RECORD_VERSION) {
    throw new StoreUnavailableError(`a stored record has format version ${version}; this build reads ${RECORD_VERSION}`);
  }
  return deepFreeze(JSON.parse(text)) as T;
}

export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
