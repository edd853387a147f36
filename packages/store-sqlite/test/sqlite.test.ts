import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ConflictError, StoreUnavailableError } from "@alma-harness/core";
import { reservationOf, SCOPE_A, T0, userMsg } from "@alma-harness/testing";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { mapSqliteError } from "../src/db.js";
import {
  createSqliteStores,
  defaultRootPath,
  MAIN_MIGRATIONS,
  ROOT_MIGRATIONS,
} from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const fresh = () => join(dir, `case-${++n}`, "alma.db");

describe("sqlite: files, WAL and migrations", () => {
  it("attached: creates the main file and the root-results file beside it, both in WAL mode", () => {
    const path = fresh();
    const stores = createSqliteStores({ path, rootResults: "attached" });
    expect(stores.rootResultsIn).toBe("attached");
    stores.close();
    const rootPath = join(dir, `case-${n}`, "alma.root-results.db");
    expect([existsSync(path), existsSync(rootPath)]).toEqual([true, true]);
    for (const file of [path, rootPath]) {
      const raw = new Database(file, { readonly: true });
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      raw.close();
    }
  });

  it("derives the root-results path from the main path", () => {
    expect(defaultRootPath("/data/alma.db")).toBe("/data/alma.root-results.db");
    expect(defaultRootPath("/data/alma")).toBe("/data/alma.root-results.db");
    expect(defaultRootPath("./x.v2/store.sqlite")).toBe("./x.v2/store.root-results.sqlite");
    expect(defaultRootPath(":memory:")).toBe(":memory:");
  });

  it("records every migration step once, and reopening applies nothing twice", () => {
    const path = fresh();
    const first = createSqliteStores({ path });
    expect(first.schema).toEqual({
      main: MAIN_MIGRATIONS.at(-1)?.version,
      root: ROOT_MIGRATIONS.at(-1)?.version,
    });
    first.close();
    const again = createSqliteStores({ path });
    again.close();
    const raw = new Database(path, { readonly: true });
    expect(raw.prepare("SELECT version, name FROM schema_version ORDER BY version").all()).toEqual(
      MAIN_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    );
    raw.close();
  });

  it("refuses to open a database migrated by a newer build", () => {
    const path = fresh();
    createSqliteStores({ path }).close();
    const raw = new Database(path);
    raw.prepare("INSERT INTO schema_version (version, name) VALUES (999, 'from the future')").run();
    raw.close();
    expect(() => createSqliteStores({ path })).toThrow(StoreUnavailableError);
  });

  it("keeps everything across a reopen", async () => {
    const path = fresh();
    const a = createSqliteStores({ path });
    await a.admissions.admit({
      scope: SCOPE_A,
      sessionId: "s1",
      rootKey: "r",
      kind: "turn",
      admissionId: "a1",
      now: T0,
      deadlineAt: T0 + 1000,
    });
    await a.sessions.append(SCOPE_A, "s1", [userMsg("kept", "e1")], {
      admissionId: "a1",
      now: T0 + 1,
    });
    await a.rootResults.reserve(reservationOf("root-1"));
    a.close();
    const b = createSqliteStores({ path });
    expect((await b.sessions.load(SCOPE_A, "s1")).messages).toEqual([userMsg("kept", "e1")]);
    expect((await b.admissions.get(SCOPE_A, "a1"))?.state).toBe("active");
    expect((await b.rootResults.get(SCOPE_A, "root-1", T0))?.state).toBe("reserved");
    b.close();
  });
});

describe("sqlite: namespaces, closing and driver errors", () => {
  it("by default a new database keeps root results in their own table set of the main file, and stays so on reopen", async () => {
    const path = fresh();
    const stores = createSqliteStores({ path });
    expect(stores.rootResultsIn).toBe("main");
    await stores.rootResults.reserve(reservationOf("final-1"));
    await stores.results.reserve(reservationOf("step-1"));
    expect(await stores.results.get(SCOPE_A, "final-1", T0)).toBeUndefined();
    expect(await stores.rootResults.get(SCOPE_A, "step-1", T0)).toBeUndefined();
    stores.close();
    expect(existsSync(join(dir, `case-${n}`, "alma.root-results.db"))).toBe(false);
    const main = new Database(path, { readonly: true });
    expect(main.prepare("SELECT result_id FROM results").all()).toEqual([{ result_id: "step-1" }]);
    expect(main.prepare("SELECT result_id FROM root_results").all()).toEqual([
      { result_id: "final-1" },
    ]);
    main.close();
    const again = createSqliteStores({ path });
    expect(again.rootResultsIn).toBe("main");
    expect((await again.rootResults.get(SCOPE_A, "final-1", T0))?.state).toBe("reserved");
    again.close();
  });

  it("an existing root-results file is attached, whatever the default", async () => {
    const path = fresh();
    createSqliteStores({ path, rootResults: "attached" }).close();
    const stores = createSqliteStores({ path });
    expect(stores.rootResultsIn).toBe("attached");
    stores.close();
  });

  it("attached: root results live only in the attached file, step results only in the main one", async () => {
    const path = fresh();
    const stores = createSqliteStores({ path, rootResults: "attached" });
    await stores.rootResults.reserve(reservationOf("final-1"));
    await stores.results.reserve(reservationOf("step-1"));
    stores.close();
    const main = new Database(path, { readonly: true });
    const root = new Database(join(dir, `case-${n}`, "alma.root-results.db"), { readonly: true });
    expect(main.prepare("SELECT result_id FROM results").all()).toEqual([{ result_id: "step-1" }]);
    expect(root.prepare("SELECT result_id FROM results").all()).toEqual([{ result_id: "final-1" }]);
    main.close();
    root.close();
  });

  it("after close, calls reject with StoreUnavailableError, never a raw driver error", async () => {
    const stores = createSqliteStores({ path: fresh() });
    stores.close();
    stores.close();
    await expect(stores.sessions.load(SCOPE_A, "s1")).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(stores.audit.query(SCOPE_A)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it("maps constraint violations to ConflictError and other driver failures to StoreUnavailableError", () => {
    const raw = new Database(":memory:");
    raw.exec("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1)");
    const caught = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return mapSqliteError(error);
      }
      return undefined;
    };
    expect(caught(() => raw.exec("INSERT INTO t VALUES (1)"))).toBeInstanceOf(ConflictError);
    expect(caught(() => raw.exec("SELECT * FROM missing"))).toBeInstanceOf(StoreUnavailableError);
    const plain = new Error("not a driver error");
    expect(mapSqliteError(plain)).toBe(plain);
    raw.close();
  });

  it("works in memory too (both namespaces in memory)", async () => {
    const stores = createSqliteStores({ path: ":memory:" });
    await stores.results.reserve(reservationOf("r1"));
    expect(await stores.rootResults.get(SCOPE_A, "r1", T0)).toBeUndefined();
    stores.close();
  });
});

const run = promisify(execFile);

describe("sqlite: several processes on one file", () => {
  it("every claim and every session admission is won by exactly one process", async () => {
    const path = fresh();
    createSqliteStores({ path }).close();
    const worker = join(import.meta.dirname, "claim-worker.ts");
    const count = 40;
    const outputs = await Promise.all(
      ["w1", "w2", "w3"].map((name) =>
        run(
          process.execPath,
          ["--conditions=alma-source", "--import", "tsx", worker, path, name, String(count)],
          { cwd: join(import.meta.dirname, "..") },
        ),
      ),
    );
    const won = outputs.flatMap((o) => JSON.parse(o.stdout) as string[]);
    const expected = Array.from({ length: count }, (_, i) => [`op-${i}`, `s-${i}`]).flat();
    expect([...won].sort()).toEqual([...expected].sort());
  });
});
