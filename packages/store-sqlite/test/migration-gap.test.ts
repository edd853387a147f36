import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { migrate } from "../src/db.js";
import { MAIN_MIGRATIONS, type Migration } from "../src/migrations.js";

/** Another branch's step 3, as it may land after this branch's step 4 (versions are reserved per branch). */
const STEP_3: Migration = { version: 3, name: "another branch", sql: "CREATE TABLE gap_probe (id INTEGER PRIMARY KEY);" };
const withThree = [...MAIN_MIGRATIONS.filter((m) => m.version < 3), STEP_3, ...MAIN_MIGRATIONS.filter((m) => m.version > 3)];

const versions = (raw: Database.Database) => (raw.prepare("SELECT version FROM main.schema_version ORDER BY version").all() as { version: number }[]).map((r) => r.version);
const tables = (raw: Database.Database) =>
  (raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('gap_probe', 'usage_inbox') ORDER BY name").all() as { name: string }[]).map((r) => r.name);

describe("sqlite: migration versions with a gap", () => {
  it("a file at 4 without 3 gets 3 when it lands; once both are there nothing runs again", () => {
    const raw = new Database(":memory:");
    migrate(raw, "main", MAIN_MIGRATIONS);
    expect(versions(raw)).toEqual([1, 2, 4]);
    migrate(raw, "main", withThree);
    expect(versions(raw)).toEqual([1, 2, 3, 4]);
    expect(tables(raw)).toEqual(["gap_probe", "usage_inbox"]);
    migrate(raw, "main", withThree);
    expect(versions(raw)).toEqual([1, 2, 3, 4]);
    raw.close();
  });

  it("a file at 3 (the other branch alone) gets 4; a fresh file gets both in order", () => {
    const other = new Database(":memory:");
    migrate(other, "main", withThree.filter((m) => m.version !== 4));
    expect(versions(other)).toEqual([1, 2, 3]);
    migrate(other, "main", withThree);
    expect(versions(other)).toEqual([1, 2, 3, 4]);
    expect(tables(other)).toEqual(["gap_probe", "usage_inbox"]);
    other.close();
    const fresh = new Database(":memory:");
    migrate(fresh, "main", withThree);
    expect(versions(fresh)).toEqual([1, 2, 3, 4]);
    fresh.close();
  });
});
