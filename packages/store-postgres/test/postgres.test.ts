import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { ConflictError, FenceError, StoreUnavailableError } from "@alma-harness/core";
import { admitWith, reservationOf, SCOPE_A, T0, userMsg } from "@alma-harness/testing";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli.js";
import {
  createPostgresStores,
  loadMigrations,
  mapPgError,
  migrate,
  schemaVersion,
} from "../src/index.js";
import { qualifier, schemaOf, schemaPool, transaction } from "../src/pg.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("pg");
const admin = DATABASE_URL ? new pg.Pool({ connectionString: DATABASE_URL, max: 4 }) : undefined;
afterAll(async () => {
  await schemas.dropAll();
  await admin?.end();
});
const url = DATABASE_URL ?? "";
const skip = `${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`;

function dbError(code: string): pg.DatabaseError {
  const error = new pg.DatabaseError(`simulated ${code}`, 0, "error");
  error.code = code;
  return error;
}

describe("postgres: driver errors as contract errors (no database needed)", () => {
  it("maps unique violations to ConflictError and everything else to StoreUnavailableError", () => {
    expect(mapPgError(dbError("23505"))).toBeInstanceOf(ConflictError);
    for (const code of ["40001", "40P01", "57P01", "08006", "42P01"])
      expect(mapPgError(dbError(code))).toBeInstanceOf(StoreUnavailableError);
    expect(mapPgError(new Error("Connection terminated unexpectedly"))).toBeInstanceOf(
      StoreUnavailableError,
    );
    const fence = new FenceError();
    expect(mapPgError(fence)).toBe(fence);
  });

  it("ships its migrations in order, each naming its target schema", () => {
    const steps = loadMigrations();
    expect(steps.map((s) => [s.version, s.target])).toEqual([
      [1, "main"],
      [2, "root"],
      [3, "main"],
      [4, "main"],
      [5, "main"],
      [7, "main"],
      [8, "main"],
      [9, "main"],
      [10, "main"],
      [11, "main"],
    ]);
  });

  it("parses the CLI's arguments", () => {
    expect(parseArgs(["postgres://x/db"])).toEqual({
      url: "postgres://x/db",
      schema: "alma",
      rootSchema: "alma_root",
    });
    expect(parseArgs(["u", "--schema", "a", "--root-schema", "b"])).toEqual({
      url: "u",
      schema: "a",
      rootSchema: "b",
    });
    expect(() => parseArgs([])).toThrow(/usage/);
    expect(() => parseArgs(["u", "--schema"])).toThrow(/needs a value/);
    expect(() => parseArgs(["u", "v"])).toThrow(/unexpected/);
  });
});

describe.skipIf(!DATABASE_URL)(`postgres: migrations and the CLI${skip}`, () => {
  it("applies each step once, even with several migrators at once, and records it", async () => {
    const names = schemas.next();
    const pools = [1, 2, 3].map(() => new pg.Pool({ connectionString: url, max: 1 }));
    const applied = await Promise.all(pools.map((p) => migrate(p, names)));
    await Promise.all(pools.map((p) => p.end()));
    expect(applied.flat().sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 7, 8, 9, 10, 11]);
    const { rows } = await admin!.query(
      `SELECT version, target FROM ${names.schema}.alma_schema_migrations ORDER BY version`,
    );
    expect(rows).toEqual([
      { version: 1, target: "main" },
      { version: 2, target: "root" },
      { version: 3, target: "main" },
      { version: 4, target: "main" },
      { version: 5, target: "main" },
      { version: 7, target: "main" },
      { version: 8, target: "main" },
      { version: 9, target: "main" },
      { version: 10, target: "main" },
      { version: 11, target: "main" },
    ]);
    expect(await migrate(admin!, names)).toEqual([]);
  });

  it("refuses a database newer than this build, and opening an unmigrated schema", async () => {
    const names = schemas.next();
    await expect(createPostgresStores({ connectionString: url, ...names })).rejects.toThrow(
      /alma-pg-migrate/,
    );
    await migrate(admin!, names);
    await admin!.query(
      `INSERT INTO ${names.schema}.alma_schema_migrations (version, name, target) VALUES (99, 'future', 'main')`,
    );
    await expect(migrate(admin!, names)).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(createPostgresStores({ connectionString: url, ...names })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
    await expect(
      createPostgresStores({ connectionString: url, schema: "same", rootSchema: "same" }),
    ).rejects.toThrow(/must differ/);
  });

  it("alma-pg-migrate migrates a database and reports when it is up to date", async () => {
    const names = schemas.next();
    const cli = join(import.meta.dirname, "..", "src", "cli.ts");
    const args = [
      "--conditions=alma-source",
      "--import",
      "tsx",
      cli,
      url,
      "--schema",
      names.schema,
      "--root-schema",
      names.rootSchema,
    ];
    const exec = promisify(execFile);
    expect((await exec(process.execPath, args)).stdout).toBe(
      "alma-pg-migrate: applied 1, 2, 3, 4, 5, 7, 8, 9, 10, 11\n",
    );
    expect((await exec(process.execPath, args)).stdout).toBe("alma-pg-migrate: up to date\n");
    expect(await schemaVersion(admin!, names.schema)).toBe(11);
  });
});

describe.skipIf(!DATABASE_URL)(`postgres: namespaces, instances and closing${skip}`, () => {
  it("root results land in the root schema only; the pools set no search_path (behind a pooler)", async () => {
    const names = schemas.next();
    const stores = await createPostgresStores({ connectionString: url, ...names, migrate: true });
    await stores.rootResults.reserve(reservationOf("final-1"));
    await stores.results.reserve(reservationOf("step-1"));
    await stores.close();
    // The statements name their schema: a session of these pools keeps the server's search_path.
    const root = schemaPool({ connectionString: url, max: 1 }, names.rootSchema);
    expect(schemaOf(root)).toBe(names.rootSchema);
    const seen = await root.query<{ path: string }>(
      "SELECT current_setting('search_path') AS path",
    );
    await root.end();
    expect(seen.rows[0]?.path).toBe('"$user", public');
    const rows = async (schema: string) =>
      (await admin!.query(`SELECT result_id FROM ${schema}.results`)).rows;
    expect(await rows(names.rootSchema)).toEqual([{ result_id: "final-1" }]);
    expect(await rows(names.schema)).toEqual([{ result_id: "step-1" }]);
  });

  it("a statement's tables are named with the pool's schema, once per text; other names are left", () => {
    const q = qualifier("alma_x");
    expect(
      q(
        "WITH up AS (UPDATE execution SET a = 1 RETURNING *) DELETE FROM spend_reservations h USING up",
      ),
    ).toBe(
      "WITH up AS (UPDATE alma_x.execution SET a = 1 RETURNING *) DELETE FROM alma_x.spend_reservations h USING up",
    );
    expect(q("INSERT INTO parked_asks(ask_id) SELECT a FROM unnest($1::text[]) AS a")).toBe(
      "INSERT INTO alma_x.parked_asks(ask_id) SELECT a FROM unnest($1::text[]) AS a",
    );
    expect(q("SELECT * FROM root_x.results r JOIN admissions a ON true FOR UPDATE OF r")).toBe(
      "SELECT * FROM root_x.results r JOIN alma_x.admissions a ON true FOR UPDATE OF r",
    );
    expect(q("SELECT sessions FROM sessions_view")).toBe("SELECT sessions FROM sessions_view");
    expect(qualifier(undefined)("SELECT * FROM admissions")).toBe("SELECT * FROM admissions");
  });

  it("two store instances (as two hosts) admit one turn per session and share the fence", async () => {
    const names = schemas.next();
    const a = await createPostgresStores({ connectionString: url, ...names, migrate: true });
    const b = await createPostgresStores({ connectionString: url, ...names });
    try {
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          admitWith((i % 2 ? a : b).admissions, { admissionId: `adm-${i}` }),
        ),
      );
      const winner = results.find((r) => r.status === "admitted");
      expect(results.filter((r) => r.status === "admitted")).toHaveLength(1);
      const id = winner?.status === "admitted" ? winner.admission.admissionId : "none";
      await b.sessions.append(SCOPE_A, "s1", [userMsg("from b")], { admissionId: id, now: T0 + 1 });
      await a.admissions.markUncertain(SCOPE_A, id);
      await expect(
        b.sessions.append(SCOPE_A, "s1", [userMsg("late")], { admissionId: id, now: T0 + 2 }),
      ).rejects.toBeInstanceOf(FenceError);
      expect((await a.sessions.load(SCOPE_A, "s1")).revision).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("after close, calls reject with StoreUnavailableError; close twice is fine", async () => {
    const stores = await createPostgresStores({
      connectionString: url,
      ...schemas.next(),
      migrate: true,
    });
    await stores.close();
    await stores.close();
    await expect(stores.sessions.load(SCOPE_A, "s1")).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(
      stores.admissions.admit({
        scope: SCOPE_A,
        sessionId: "s",
        rootKey: "r",
        kind: "turn",
        admissionId: "a",
        now: 1,
        deadlineAt: 2,
      }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("retries a transaction that hit a serialization failure, and gives up as unavailable", async () => {
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    let calls = 0;
    const value = await transaction(pool, async () => {
      calls += 1;
      if (calls === 1) throw dbError("40001");
      return "done";
    });
    expect([value, calls]).toEqual(["done", 2]);
    await expect(
      transaction(pool, async () => {
        throw dbError("40P01");
      }),
    ).rejects.toBeInstanceOf(StoreUnavailableError);
    await pool.end();
  });
});
