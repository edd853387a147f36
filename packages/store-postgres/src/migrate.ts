import { readdirSync, readFileSync } from "node:fs";
import { StoreUnavailableError } from "@alma-harness/core";
import type pg from "pg";
import { mapPgError, validateSchema } from "./pg.js";

/** One versioned SQL file of `migrations/`: `NNNN_name.sql`, first line `-- alma:target main|root`. */
export interface PgMigration {
  readonly version: number;
  readonly name: string;
  readonly target: "main" | "root";
  readonly sql: string;
}

export interface SchemaNames {
  /** Every store but root results (default `alma`). */
  readonly schema?: string;
  /** Root results, reached only through their own pool (default `alma_root`). */
  readonly rootSchema?: string;
}

export const DEFAULT_SCHEMA = "alma";
export const DEFAULT_ROOT_SCHEMA = "alma_root";

/** The packaged migrations folder: `../migrations` from both `src/` and `dist/`. */
const MIGRATIONS_DIR = new URL("../migrations/", import.meta.url);

/** Reads and checks the migration files, in version order. */
export function loadMigrations(dir: URL = MIGRATIONS_DIR): readonly PgMigration[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".sql"))
    .sort();
  let previous = 0;
  const out = files.map((file): PgMigration => {
    const match = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!match) throw new Error(`migration file "${file}" is not named NNNN_name.sql`);
    const version = Number(match[1]);
    // Versions only increase; a gap is allowed (numbers are reserved per branch and land in any order).
    if (version <= previous)
      throw new Error(`migration "${file}" breaks the sequence (versions must increase)`);
    previous = version;
    const sql = readFileSync(new URL(file, dir), "utf8");
    const target = /^-- alma:target (main|root)\s*$/m.exec(sql.split("\n", 1)[0] ?? "")?.[1];
    if (target !== "main" && target !== "root")
      throw new Error(`migration "${file}" must start with "-- alma:target main|root"`);
    return { version, name: match[2] as string, target, sql };
  });
  return Object.freeze(out);
}

export function resolveSchemas(names: SchemaNames = {}): {
  readonly schema: string;
  readonly rootSchema: string;
} {
  const schema = validateSchema(names.schema ?? DEFAULT_SCHEMA, "schema");
  const rootSchema = validateSchema(names.rootSchema ?? DEFAULT_ROOT_SCHEMA, "rootSchema");
  if (schema === rootSchema)
    throw new StoreUnavailableError(
      "root results need their own schema: schema and rootSchema must differ",
    );
  return { schema, rootSchema };
}

export const LATEST_VERSION = (): number => loadMigrations().at(-1)?.version ?? 0;

/**
 * Brings both schemas to the latest version, in one transaction under a transaction advisory lock
 * (no session state: it works behind PgBouncer in transaction pooling mode), so concurrent
 * migrators (several hosts starting at once) apply each step once, and a step that fails leaves
 * nothing of this call; a database newer than this build is refused. Every step not yet recorded
 * is applied, in version order, even one below the highest recorded (numbers are reserved per
 * branch and may land out of order). `dir` names another migrations folder (tests). Returns the
 * versions applied by this call.
 */
export async function migrate(
  pool: pg.Pool,
  names: SchemaNames = {},
  dir?: URL,
): Promise<readonly number[]> {
  const { schema, rootSchema } = resolveSchemas(names);
  const steps = loadMigrations(dir);
  const client = await pool.connect().catch((error: unknown) => {
    throw mapPgError(error);
  });
  try {
    await client.query("BEGIN");
    const applied = await migrateIn(client, { schema, rootSchema }, steps);
    await client.query("COMMIT");
    return applied;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw mapPgError(error);
  } finally {
    client.release();
  }
}

/** `migrate`'s work inside its transaction: the lock, the version check, each missing step. */
async function migrateIn(
  client: pg.PoolClient,
  { schema, rootSchema }: { readonly schema: string; readonly rootSchema: string },
  steps: readonly PgMigration[],
): Promise<readonly number[]> {
  await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
    `alma:migrate:${schema}`,
  ]);
  await client.query(
    `CREATE SCHEMA IF NOT EXISTS ${schema}; CREATE SCHEMA IF NOT EXISTS ${rootSchema}`,
  );
  await client.query(
    `CREATE TABLE IF NOT EXISTS ${schema}.alma_schema_migrations (
       version integer PRIMARY KEY, name text NOT NULL, target text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  const current = await schemaVersion(client, schema);
  const latest = steps.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new StoreUnavailableError(
      `schema ${schema} is at version ${current}, newer than this build's ${latest}`,
    );
  }
  // Every step not yet recorded, even below the recorded maximum: a schema may hold 0005 before 0004 lands.
  const done = new Set(
    (
      await client.query<{ version: number }>(
        `SELECT version FROM ${schema}.alma_schema_migrations`,
      )
    ).rows.map((r) => r.version),
  );
  const applied: number[] = [];
  for (const step of steps.filter((s) => !done.has(s.version))) {
    // The step's own names resolve in its target schema, for this transaction only.
    await client.query(`SET LOCAL search_path TO ${step.target === "root" ? rootSchema : schema}`);
    await client.query(step.sql);
    await client.query(
      `INSERT INTO ${schema}.alma_schema_migrations (version, name, target) VALUES ($1, $2, $3)`,
      [step.version, step.name, step.target],
    );
    applied.push(step.version);
  }
  return Object.freeze(applied);
}

/** The highest applied migration of `schema`, 0 when none (or no version table). */
export async function schemaVersion(db: Pick<pg.Pool, "query">, schema: string): Promise<number> {
  const name = validateSchema(schema);
  const exists = await db.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [
    `${name}.alma_schema_migrations`,
  ]);
  if (!exists.rows[0]?.t) return 0;
  const row = await db.query<{ v: number | null }>(
    `SELECT max(version) AS v FROM ${name}.alma_schema_migrations`,
  );
  return row.rows[0]?.v ?? 0;
}

/** The versions of this build's migrations that `schema` has not recorded (every one when it has no version table). */
export async function pendingMigrations(
  db: Pick<pg.Pool, "query">,
  schema: string,
): Promise<readonly number[]> {
  const name = validateSchema(schema);
  const steps = loadMigrations().map((s) => s.version);
  const exists = await db.query<{ t: string | null }>(`SELECT to_regclass($1) AS t`, [
    `${name}.alma_schema_migrations`,
  ]);
  if (!exists.rows[0]?.t) return steps;
  const done = new Set(
    (
      await db.query<{ version: number }>(`SELECT version FROM ${name}.alma_schema_migrations`)
    ).rows.map((r) => r.version),
  );
  return steps.filter((v) => !done.has(v));
}
