import pg from "pg";

/** The database the Postgres suites run against; unset means they are skipped, visibly. */
export const DATABASE_URL = process.env.ALMA_TEST_DATABASE_URL;

export const SKIP_REASON = "skipped: set ALMA_TEST_DATABASE_URL (see scripts/pg-up.sh)";

/**
 * Fresh schema names for one test file: every factory call gets its own pair, and `dropAll`
 * removes them, so files and tests never share rows.
 */
export function schemaFactory(tag: string): { next(): { schema: string; rootSchema: string }; dropAll(): Promise<void> } {
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
        for (const schema of created) await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      } finally {
        await pool.end();
      }
    },
  };
}
