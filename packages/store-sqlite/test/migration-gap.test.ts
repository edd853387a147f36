import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { migrate } from "../src/db.js";
import { MAIN_MIGRATIONS } from "../src/migrations.js";

// Version numbers are reserved per branch and may land out of order: step 3 (scope fences) and
// step 4 (usage inbox) were built side by side. A file migrated by a build without 3 gets it later.
const upToFour = MAIN_MIGRATIONS.filter((m) => m.version <= 4);
const withoutThree = MAIN_MIGRATIONS.filter((m) => m.version !== 3);
const withoutFour = MAIN_MIGRATIONS.filter((m) => m.version !== 4);

/** Every version this build has (other steps land beside 3 and 4: the test holds for any list that has them). */
const ALL = MAIN_MIGRATIONS.map((m) => m.version);
const versions = (raw: Database.Database) =>
  (
    raw.prepare("SELECT version FROM main.schema_version ORDER BY version").all() as {
      version: number;
    }[]
  ).map((r) => r.version);
const tables = (raw: Database.Database) =>
  (
    raw
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('scope_fences', 'usage_inbox') ORDER BY name",
      )
      .all() as { name: string }[]
  ).map((r) => r.name);

describe("sqlite: migration versions with a gap", () => {
  it("a file at 4 without 3 gets 3 when it lands; once both are there nothing runs again", () => {
    expect(ALL.slice(0, 4)).toEqual([1, 2, 3, 4]);
    const raw = new Database(":memory:");
    migrate(raw, "main", withoutThree);
    expect(versions(raw)).toEqual(ALL.filter((v) => v !== 3));
    expect(tables(raw)).toEqual(["usage_inbox"]);
    migrate(raw, "main", MAIN_MIGRATIONS);
    expect(versions(raw)).toEqual(ALL);
    expect(tables(raw)).toEqual(["scope_fences", "usage_inbox"]);
    migrate(raw, "main", MAIN_MIGRATIONS);
    expect(versions(raw)).toEqual(ALL);
    raw.close();
  });

  it("a file at 3 (without 4) gets 4; a fresh file gets both in order", () => {
    const other = new Database(":memory:");
    migrate(other, "main", withoutFour);
    expect(versions(other)).toEqual(ALL.filter((v) => v !== 4));
    migrate(other, "main", MAIN_MIGRATIONS);
    expect(versions(other)).toEqual(ALL);
    expect(tables(other)).toEqual(["scope_fences", "usage_inbox"]);
    other.close();
    const fresh = new Database(":memory:");
    migrate(fresh, "main", MAIN_MIGRATIONS);
    expect(versions(fresh)).toEqual(ALL);
    fresh.close();
  });

  it("a file at 4 gets 6 (model jobs) when it lands, whatever 5 is; nothing runs again", () => {
    const raw = new Database(":memory:");
    migrate(raw, "main", upToFour);
    migrate(raw, "main", MAIN_MIGRATIONS);
    const six = versions(raw);
    expect(six.includes(6) && six.slice(0, 4).join(",") === "1,2,3,4").toBe(true);
    expect(
      (
        raw
          .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'model_job%' ORDER BY name",
          )
          .all() as { name: string }[]
      ).map((r) => r.name),
    ).toEqual(["model_job_items", "model_jobs"]);
    migrate(raw, "main", MAIN_MIGRATIONS);
    expect(versions(raw)).toEqual(six);
    raw.close();
  });
});
