import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { StoreUnavailableError, trailId } from "@alma-harness/core";
import {
  admitWith,
  claimOf,
  governedWritesContract,
  SCOPE_A,
  storeContracts,
  T0,
} from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../src/db.js";
import { createSqliteStores } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-grouped-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const path = () => {
  n += 1;
  return join(dir, `db-${n}`, "alma.db");
};

/** What a fresh connection on `file` sees of an admission. */
async function admissionStateOn(file: string, admissionId = "adm-1"): Promise<string | undefined> {
  const b = createSqliteStores({ path: file });
  try {
    return (await b.admissions.get(SCOPE_A, admissionId))?.state;
  } finally {
    b.close();
  }
}

// Every contract holds in grouped mode too: a store set sees its own pending writes.
const grouped = () =>
  createSqliteStores({ path: path(), synchronous: "normal", commits: "grouped" });
storeContracts("sqlite grouped", grouped, { describe, it, expect });
governedWritesContract("sqlite grouped", grouped, { describe, it, expect });
// Attached root results, grouped: every root write commits alone, after what is pending in the main file.
const groupedAttached = () =>
  createSqliteStores({
    path: path(),
    synchronous: "normal",
    commits: "grouped",
    rootResults: "attached",
  });
storeContracts("sqlite grouped attached", groupedAttached, { describe, it, expect });
governedWritesContract("sqlite grouped attached", groupedAttached, { describe, it, expect });

describe("grouped commits: durable at the durability points, never later", () => {
  it("a claim is pending until dispatch commits it with everything before it; another connection sees it only then", async () => {
    const file = path();
    const a = createSqliteStores({ path: file, commits: "grouped" });
    const other = createSqliteStores({ path: file, busyTimeoutMs: 0 });
    try {
      await admitWith(a.admissions, { admissionId: "adm-1" });
      const claimed = await a.execution.claim(claimOf("op-1"), { admissionId: "adm-1" });
      if (claimed.status !== "claimed") throw new Error("expected a claim");
      await a.audit.append({
        trail: "lifecycle",
        action: "turn.started",
        scope: SCOPE_A,
        sessionId: trailId("s1"),
        turnId: trailId("turn-1"),
        at: T0,
      });
      expect(await a.execution.get(SCOPE_A, "op-1")).toBeDefined();
      expect(await other.execution.get(SCOPE_A, "op-1")).toBeUndefined();
      const before = a.commitCount();
      await a.execution.dispatch(claimed.fence, T0 + 1);
      expect(a.commitCount()).toBe(before + 1);
      const seen = [
        (await other.execution.get(SCOPE_A, "op-1"))?.state,
        (await other.admissions.get(SCOPE_A, "adm-1"))?.state,
        (await other.audit.query(SCOPE_A)).items.length,
      ];
      expect(seen).toEqual(["dispatching", "active", 1]);
    } finally {
      a.close();
      other.close();
    }
  });

  it("a refused write rolls back alone: the writes before it stay pending and commit", async () => {
    const file = path();
    const a = createSqliteStores({ path: file, commits: "grouped" });
    try {
      await admitWith(a.admissions, { admissionId: "adm-1" });
      await expect(
        a.sessions.append(SCOPE_A, "s1", [], { admissionId: "adm-missing", now: T0 }),
      ).rejects.toThrow();
      await a.barrier.commit();
    } finally {
      a.close();
    }
    expect(await admissionStateOn(file)).toBe("active");
  });

  it("close commits what is pending; the barrier is a no-op when nothing is", async () => {
    const file = path();
    const a = createSqliteStores({ path: file, commits: "grouped" });
    const count = a.commitCount();
    await a.barrier.commit();
    expect(a.commitCount()).toBe(count);
    await admitWith(a.admissions, { admissionId: "adm-1" });
    a.close();
    expect(await admissionStateOn(file)).toBe("active");
  });

  it("a failed commit loses the pending writes and refuses every later write until reopened", async () => {
    const db = openDatabase({ path: path(), commits: "grouped" });
    try {
      db.write(() => db.stmt("INSERT INTO sealed_label_scopes (scope) VALUES (?)").run("org/one"));
      const prepare = db.raw.prepare.bind(db.raw);
      (db.raw as { prepare: (sql: string) => unknown }).prepare = (sql: string) => {
        if (sql === "COMMIT") throw new Error("disk I/O error");
        return prepare(sql);
      };
      expect(() => db.commit()).toThrow(StoreUnavailableError);
      (db.raw as { prepare: unknown }).prepare = prepare;
      expect(db.raw.prepare("SELECT COUNT(*) AS n FROM sealed_label_scopes").get()).toEqual({
        n: 0,
      });
      expect(() =>
        db.write(() =>
          db.stmt("INSERT INTO sealed_label_scopes (scope) VALUES (?)").run("org/two"),
        ),
      ).toThrow(StoreUnavailableError);
      expect(() => db.commit()).toThrow(StoreUnavailableError);
    } finally {
      db.raw.close();
    }
  });
});
