import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type V1Reads,
  v1FixtureReadsContract,
  v1FixtureReopened,
  v1FixtureWrites,
} from "@alma-harness/testing";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSqliteStores,
  MAIN_MIGRATIONS,
  ROOT_MIGRATIONS,
  type SqliteStores,
} from "../src/index.js";

/**
 * Records written by the schema and code as released at commit f53caac (main schema version 1,
 * root version 1, record version 1), read by this build after its migrations ran on open. See
 * fixtures/v1/README.md for how the files and `reads.json` (what the old stores returned) were made.
 * The read checks are the shared `v1FixtureReadsContract` (PostgreSQL runs the same).
 */
const FIXTURES = fileURLToPath(new URL("./fixtures/v1/", import.meta.url));
const READS = JSON.parse(readFileSync(join(FIXTURES, "reads.json"), "utf8")) as V1Reads;
const t = { describe, it, expect };

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A copy of the fixture's two files in a fresh directory (the fixture itself is never opened). */
function copyFixture(): string {
  const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-v1-"));
  dirs.push(dir);
  for (const file of ["alma.db", "alma.root-results.db"])
    copyFileSync(join(FIXTURES, file), join(dir, file));
  return join(dir, "alma.db");
}

const open = (path: string) => createSqliteStores({ path, synchronous: "normal" });

/** Every row of every table of both files (but the version tables), in a stable order. */
function rowsOf(path: string): Record<string, string[]> {
  const raw = new Database(path, { readonly: true });
  try {
    raw.prepare("ATTACH DATABASE ? AS root").run(path.replace(/\.db$/, ".root-results.db"));
    const out: Record<string, string[]> = {};
    for (const schema of ["main", "root"]) {
      const tables = raw
        .prepare(
          `SELECT name FROM ${schema}.sqlite_master WHERE type = 'table' AND name NOT IN ('schema_version', 'sqlite_sequence') ORDER BY name`,
        )
        .all() as { name: string }[];
      for (const { name } of tables) {
        out[`${schema}.${name}`] = (
          raw.prepare(`SELECT * FROM ${schema}.${name}`).all() as unknown[]
        )
          .map((r) => JSON.stringify(r))
          .sort();
      }
    }
    return out;
  } finally {
    raw.close();
  }
}

function versionsOf(path: string): { main: unknown[]; root: unknown[] } {
  const raw = new Database(path, { readonly: true });
  try {
    raw.prepare("ATTACH DATABASE ? AS root").run(path.replace(/\.db$/, ".root-results.db"));
    const q = (schema: string) =>
      raw.prepare(`SELECT version, name FROM ${schema}.schema_version ORDER BY version`).all();
    return { main: q("main"), root: q("root") };
  } finally {
    raw.close();
  }
}

describe("sqlite: the v1 fixture (commit f53caac) before this build opens it", () => {
  it("is at main schema version 1 and root version 1, has no reservations table and a row in every table", () => {
    const path = copyFixture();
    expect(versionsOf(path)).toEqual({
      main: [{ version: 1, name: "stores" }],
      root: [{ version: 1, name: "root results" }],
    });
    const rows = rowsOf(path);
    expect(Object.keys(rows)).not.toContain("main.spend_reservations");
    for (const [table, list] of Object.entries(rows)) expect(list.length, table).toBeGreaterThan(0);
    expect(Object.keys(rows)).toHaveLength(13);
  });
});

describe("sqlite: this build reads the v1 fixture after migrating it", () => {
  let path: string;
  let before: Record<string, string[]>;
  let stores: SqliteStores;
  beforeAll(() => {
    path = copyFixture();
    before = rowsOf(path);
    stores = open(path);
  });
  afterAll(() => stores?.close());

  it("applies migrations 2 (spend reservations), 3 (scope fences), 4 (usage inbox) and 6 (model jobs) once on open and leaves every v1 row as it was", () => {
    expect(stores.schema).toEqual({ main: MAIN_MIGRATIONS.at(-1)?.version, root: 1 });
    expect(versionsOf(path)).toEqual({
      main: MAIN_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
      root: ROOT_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    });
    expect(MAIN_MIGRATIONS.map((m) => m.version).slice(0, 4)).toEqual([1, 2, 3, 4]);
    const after = rowsOf(path);
    expect(after["main.spend_reservations"]).toEqual([]);
    expect(after["main.scope_fences"]).toEqual([]);
    expect(after["main.usage_inbox"]).toEqual([]);
    // Every table a later step added is empty (an FTS5 index's own shadow tables hold its configuration).
    for (const name of Object.keys(after).filter((k) => !(k in before)))
      if (!/_fts_\w+$/.test(name)) expect(after[name], name).toEqual([]);
    const old = Object.fromEntries(Object.entries(after).filter(([k]) => k in before));
    expect(old).toEqual(before);
  });

  v1FixtureReadsContract(() => stores, READS, t);
});

describe("sqlite: new writes on the migrated v1 fixture", () => {
  it("admits, appends, claims with a reservation on top of the old spend, and the settlement releases it", async () => {
    const path = copyFixture();
    const stores = open(path);
    const held = () => {
      const raw = new Database(path, { readonly: true });
      try {
        return raw
          .prepare(
            "SELECT scope, operation_id, session_id, org, day, usd_micros FROM spend_reservations",
          )
          .all();
      } finally {
        raw.close();
      }
    };
    try {
      await v1FixtureWrites(stores, READS, held, t);
    } finally {
      stores.close();
    }

    // Reopening the migrated file applies nothing again and still reads the old records.
    const again = open(path);
    try {
      expect(again.schema).toEqual({ main: MAIN_MIGRATIONS.at(-1)?.version, root: 1 });
      expect(versionsOf(path).main).toHaveLength(MAIN_MIGRATIONS.length);
      await v1FixtureReopened(again, READS, t);
    } finally {
      again.close();
    }
  });
});
