import pg from "pg";
import { afterAll } from "vitest";

/** The database the Postgres suites run against; unset means they are skipped, visibly. */
export const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

export const SKIP_REASON = "skipped: set ALMA_TEST_DATABASE_URL (see scripts/pg-up.sh)";

/**
 * Fresh schema names for one test file: every factory call gets its own pair, and `dropAll`
 * removes them, so files and tests never share rows.
 */
export function schemaFactory(tag: string): {
  next(): { schema: string; rootSchema: string };
  dropAll(): Promise<void>;
} {
  const created: string[] = [];
  const run = `${tag}_${process.pid}_${Date.now().toString(36)}`;
  let n = 0;
  return {
    next() {
      n += 1;
      const schema = `t_${run}_${n}`;
      created.push(schema, `${schema}_root`);
      return { schema, rootSchema: `${schema}_root` };
    },
    async dropAll() {
      if (!DATABASE_URL || created.length === 0) return;
      const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });
      try {
        // A hundred schemas a statement: a file of hundreds of tests drops them in a few round trips.
        for (let i = 0; i < created.length; i += 100)
          await pool.query(`DROP SCHEMA IF EXISTS ${created.slice(i, i + 100).join(", ")} CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}

/**
 * A test file's PostgreSQL setup: its schema factory, the URL, an admin pool for direct SQL (`max`
 * clients) and the skip note for its suite titles; after the file, its schemas are dropped and the
 * pool ended.
 */
export function pgSuite(
  tag: string,
  max = 4,
): {
  readonly schemas: ReturnType<typeof schemaFactory>;
  readonly url: string;
  readonly admin: pg.Pool | undefined;
  readonly skip: string;
} {
  const schemas = schemaFactory(tag);
  const url = DATABASE_URL ?? "";
  const admin = DATABASE_URL ? new pg.Pool({ connectionString: url, max }) : undefined;
  // Dropping every schema pair a file made takes a while on a shared machine (the grouped suite
  // makes several hundred): the hook's own timeout, not the default 10 s.
  afterAll(async () => {
    await schemas.dropAll();
    await admin?.end();
  }, 120_000);
  return { schemas, url, admin, skip: DATABASE_URL ? "" : ` (${SKIP_REASON})` };
}

/** What `hookQueries` calls with each statement's arguments and the client's own `query`. */
export type QueryHook = (args: unknown[], query: (...args: unknown[]) => unknown) => unknown;

/** Routes every statement the clients of `pool` send through `hook` (`pool.query` passes a callback; the stores' transactions use the promise). */
export function hookQueries(pool: pg.Pool, hook: QueryHook): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (
      ...args: unknown[]
    ) => hook(args, query);
  });
}
