import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type V1Reads,
  v1FixtureReadsContract,
  v1FixtureReopened,
  v1FixtureWrites,
} from "@alma-harness/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPostgresStores,
  loadMigrations,
  type PostgresStores,
  schemaVersion,
} from "../src/index.js";
import { DATABASE_URL, pgSuite } from "./support.js";

/**
 * Rows written by the schema and code as released at commit f53caac (migrations 0001-0002, record
 * version 1), loaded into a fresh schema pair migrated to that version only, then opened by this
 * build with `migrate: true` (0003 and 0004 apply). See fixtures/v1/README.md for how the dumps and
 * `reads.json` (what the old stores returned) were made. The read checks are the shared
 * `v1FixtureReadsContract` (SQLite runs the same).
 */
const FIXTURES = fileURLToPath(new URL("./fixtures/v1/", import.meta.url));
const READS = JSON.parse(readFileSync(join(FIXTURES, "reads.json"), "utf8")) as V1Reads;
/** The dumps' schema names, replaced by a fresh pair's on load. */
const DUMPED = { schema: "alma_fx", rootSchema: "alma_fx_root" };
const t = { describe, it, expect };

const { schemas, url, admin, skip } = pgSuite("fixv1", 2);

interface Names {
  readonly schema: string;
  readonly rootSchema: string;
}

/** A dump's text, and the schema version its first line records (`-- alma:schema-version N`). */
function dump(file: string): { readonly sql: string; readonly version: number } {
  const sql = readFileSync(join(FIXTURES, file), "utf8");
  const version = Number(/^-- alma:schema-version (\d+)\n/.exec(sql)?.[1]);
  if (!Number.isInteger(version))
    throw new Error(`${file} does not start with "-- alma:schema-version N"`);
  return { sql, version };
}

/**
 * A fresh schema pair at the fixture's schema version, with its rows: the migration files up to
 * that version applied as `migrate` applies them (each in its own transaction on the target
 * schema's search_path, recorded in `alma_schema_migrations`), then the two dumps.
 */
async function loadFixture(): Promise<Names> {
  const names = schemas.next();
  const main = dump("main.sql");
  const root = dump("root.sql");
  expect(root.version).toBe(main.version);
  const steps = loadMigrations().filter((s) => s.version <= main.version);
  expect(steps.map((s) => s.version)).toEqual([1, 2]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA ${names.schema}; CREATE SCHEMA ${names.rootSchema}`);
    await client.query(
      `CREATE TABLE ${names.schema}.alma_schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, target text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const step of steps) {
      await client.query("BEGIN");
      await client.query(
        `SET LOCAL search_path TO ${step.target === "root" ? names.rootSchema : names.schema}`,
      );
      await client.query(step.sql);
      await client.query(
        `INSERT INTO ${names.schema}.alma_schema_migrations (version, name, target) VALUES ($1, $2, $3)`,
        [step.version, step.name, step.target],
      );
      await client.query("COMMIT");
    }
    // Qualified names only (`alma_fx.` is no prefix of `alma_fx_root.`).
    const rename = (sql: string) =>
      sql
        .replaceAll(`${DUMPED.rootSchema}.`, `${names.rootSchema}.`)
        .replaceAll(`${DUMPED.schema}.`, `${names.schema}.`);
    // The dumps' own statements (one of them empties this session's search_path): this client only.
    await client.query(rename(main.sql));
    await client.query(rename(root.sql));
  } finally {
    await client.end();
  }
  return names;
}

const open = (names: Names) =>
  createPostgresStores({ connectionString: url, ...names, migrate: true });

/** Every row of every table of both schemas (but the version table), in a stable order. */
async function rowsOf(names: Names): Promise<Record<string, string[]>> {
  const { rows: tables } = await admin!.query<{ t: string }>(
    `SELECT table_schema || '.' || table_name AS t FROM information_schema.tables
     WHERE table_schema IN ($1, $2) AND table_name <> 'alma_schema_migrations' ORDER BY 1`,
    [names.schema, names.rootSchema],
  );
  const out: Record<string, string[]> = {};
  for (const { t } of tables) {
    const key = t.replace(`${names.rootSchema}.`, "root.").replace(`${names.schema}.`, "main.");
    out[key] = (await admin!.query(`SELECT * FROM ${t}`)).rows.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}

async function versionsOf(schema: string): Promise<unknown[]> {
  return (
    await admin!.query(
      `SELECT version, name, target FROM ${schema}.alma_schema_migrations ORDER BY version`,
    )
  ).rows;
}

describe.skipIf(!DATABASE_URL)(
  `postgres: the v1 fixture (commit f53caac) before this build opens it${skip}`,
  () => {
    it("loads at schema version 2 (0001-0002), without the reservations table, with a row in every table", async () => {
      const names = await loadFixture();
      expect(await schemaVersion(admin!, names.schema)).toBe(2);
      expect(await versionsOf(names.schema)).toEqual([
        { version: 1, name: "stores", target: "main" },
        { version: 2, name: "root_results", target: "root" },
      ]);
      const rows = await rowsOf(names);
      expect(Object.keys(rows)).not.toContain("main.spend_reservations");
      for (const [table, list] of Object.entries(rows))
        expect(list.length, table).toBeGreaterThan(0);
      expect(Object.keys(rows)).toHaveLength(13);
    });
  },
);

describe.skipIf(!DATABASE_URL)(
  `postgres: this build reads the v1 fixture after migrating it${skip}`,
  () => {
    let names: Names;
    let before: Record<string, string[]>;
    let stores: PostgresStores;
    beforeAll(async () => {
      names = await loadFixture();
      before = await rowsOf(names);
      stores = await open(names);
    });
    afterAll(async () => {
      await stores?.close();
    });

    it("applies migrations 0003 (spend reservations), 0004 (scope fences), 0005 (usage inbox) and 0007 (model jobs) once on open and leaves every v1 row as it was", async () => {
      expect(await versionsOf(names.schema)).toEqual([
        { version: 1, name: "stores", target: "main" },
        { version: 2, name: "root_results", target: "root" },
        { version: 3, name: "spend_reservations", target: "main" },
        { version: 4, name: "scope_fences", target: "main" },
        { version: 5, name: "usage_inbox", target: "main" },
        { version: 7, name: "model_jobs", target: "main" },
        { version: 8, name: "routines", target: "main" },
        { version: 9, name: "memory", target: "main" },
        { version: 10, name: "parked_turns", target: "main" },
        { version: 11, name: "parked_outputs", target: "main" },
      ]);
      expect(loadMigrations().map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 7, 8, 9, 10, 11]);
      const after = await rowsOf(names);
      // Every table a later step added is empty; every v1 table holds what it held.
      for (const name of Object.keys(after).filter((k) => !(k in before)))
        expect(after[name], name).toEqual([]);
      const old = Object.fromEntries(Object.entries(after).filter(([k]) => k in before));
      expect(old).toEqual(before);
    });

    v1FixtureReadsContract(() => stores, READS, t);
  },
);

describe.skipIf(!DATABASE_URL)(`postgres: new writes on the migrated v1 fixture${skip}`, () => {
  it("admits, appends, claims with a reservation on top of the old spend, and the settlement releases it", async () => {
    const names = await loadFixture();
    const stores = await open(names);
    const held = async () =>
      (
        await admin!.query(
          `SELECT scope, operation_id, session_id, org, day, usd_micros::int AS usd_micros FROM ${names.schema}.spend_reservations`,
        )
      ).rows;
    try {
      await v1FixtureWrites(stores, READS, held, t);
    } finally {
      await stores.close();
    }

    // Opening the migrated schemas again applies nothing and still reads the old records.
    const again = await open(names);
    try {
      expect(await versionsOf(names.schema)).toHaveLength(loadMigrations().length);
      await v1FixtureReopened(again, READS, t);
    } finally {
      await again.close();
    }
  });
});
