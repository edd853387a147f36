import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores, loadMigrations, migrate, pendingMigrations } from "../src/index.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("pggap");
const admin = DATABASE_URL ? new pg.Pool({ connectionString: DATABASE_URL, max: 2 }) : undefined;
const dirs: string[] = [];
afterAll(async () => {
  await schemas.dropAll();
  await admin?.end();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/**
 * This build's migrations as a folder `migrate` can read, without the steps in `drop`: version
 * numbers are reserved per branch and may land out of order (0004 scope fences and 0005 usage
 * inbox were built side by side), so a schema may be at 0005 before 0004 exists.
 */
function shippedWithout(...drop: number[]): URL {
  const dir = mkdtempSync(join(tmpdir(), "alma-pg-migrations-"));
  dirs.push(dir);
  const shipped = new URL("../migrations/", import.meta.url);
  for (const file of readdirSync(shipped))
    if (!drop.includes(Number(file.slice(0, 4))))
      copyFileSync(new URL(file, shipped), join(dir, file));
  return pathToFileURL(`${dir}/`);
}

describe("postgres: migration files with a gap", () => {
  it("versions must increase, a gap is allowed", () => {
    expect(loadMigrations().map((m) => m.version)).toEqual([1, 2, 3, 4, 5, 7, 8, 9, 10, 11]);
    expect(loadMigrations(shippedWithout(4)).map((m) => m.version)).toEqual([
      1, 2, 3, 5, 7, 8, 9, 10, 11,
    ]);
    const dup = shippedWithout();
    writeFileSync(new URL("0004_again.sql", dup), "-- alma:target main\nSELECT 1;\n");
    expect(() => loadMigrations(dup)).toThrow(/breaks the sequence/);
  });
});

describe.skipIf(!DATABASE_URL)(
  `postgres: a schema at 0005 without 0004${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("gets 0004 when it lands, once; opening checks every step, not the highest", async () => {
      const names = schemas.next();
      expect(await migrate(admin!, names, shippedWithout(4))).toEqual([
        1, 2, 3, 5, 7, 8, 9, 10, 11,
      ]);
      expect(await pendingMigrations(admin!, names.schema)).toEqual([4]);
      expect(await migrate(admin!, names)).toEqual([4]);
      expect(await migrate(admin!, names)).toEqual([]);
      expect(await pendingMigrations(admin!, names.schema)).toEqual([]);
      const { rows } = await admin!.query(`SELECT to_regclass($1) AS t`, [
        `${names.schema}.scope_fences`,
      ]);
      expect(rows[0]?.t).not.toBeNull();
      // A schema missing a step this build ships is refused at open, though its highest version matches.
      const other = schemas.next();
      await migrate(admin!, other);
      await admin!.query(`DELETE FROM ${other.schema}.alma_schema_migrations WHERE version = 3`);
      expect(await pendingMigrations(admin!, other.schema)).toEqual([3]);
      await expect(
        createPostgresStores({ connectionString: DATABASE_URL, ...other }),
      ).rejects.toThrow(/without step 3/);
    });
  },
);
