import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { askIdOf, digestOf, SCOPE_A, T0 } from "@alma-harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStores, type SqliteStores } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-parked-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `n` turns parked then resumed by a live run (their asks' expiry passed, their run's deadline not). */
async function liveResumed(stores: SqliteStores, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const turn = { scope: SCOPE_A, sessionId: `s${i}`, rootKey: `root-${i}` };
    await stores.admissions.admit({
      ...turn,
      kind: "turn",
      admissionId: `a${i}`,
      now: T0,
      deadlineAt: T0 + 60_000,
    });
    await stores.parked.park({
      ...turn,
      admissionId: `a${i}`,
      continuation: { step: i },
      asks: [
        { askId: askIdOf(i + 1), callId: "c", tool: "book", action: "book", digest: digestOf(1) },
      ],
      now: T0 + 1,
      expiresAt: T0 + 1_000 + i,
    });
    const claimed = await stores.parked.claim({
      scope: SCOPE_A,
      rootKey: turn.rootKey,
      admissionId: `b${i}`,
      now: T0 + 2,
      deadlineAt: T0 + 600_000,
    });
    expect(claimed.status).toBe("claimed");
  }
}

describe("sqlite parked turns beyond the contract", () => {
  it("due finds a due park behind more than a page of candidates that are not due", async () => {
    const stores = createSqliteStores({ path: join(dir, "due", "alma.db"), synchronous: "normal" });
    try {
      await liveResumed(stores, 130);
      const turn = { scope: SCOPE_A, sessionId: "sz", rootKey: "root-z" };
      await stores.admissions.admit({
        ...turn,
        kind: "turn",
        admissionId: "z1",
        now: T0,
        deadlineAt: T0 + 60_000,
      });
      await stores.parked.park({
        ...turn,
        admissionId: "z1",
        continuation: {},
        asks: [
          { askId: askIdOf(999), callId: "c", tool: "book", action: "book", digest: digestOf(1) },
        ],
        now: T0 + 1,
        expiresAt: T0 + 5_000,
      });
      const keys = async (limit?: number) =>
        (await stores.parked.due({ now: T0 + 10_000, ...(limit ? { limit } : {}) })).map(
          (d) => d.rootKey,
        );
      expect(await keys(1)).toEqual(["root-z"]);
      expect(await keys()).toEqual(["root-z"]);
      // Once the live runs' deadline passes, every one is due, oldest expiry first, a page at a time.
      const all = await stores.parked.due({ now: T0 + 600_000, limit: 500 });
      expect(all.map((d) => d.rootKey)).toEqual([
        ...Array.from({ length: 130 }, (_, i) => `root-${i}`),
        "root-z",
      ]);
      expect(await stores.parked.due({ now: T0 + 600_000, limit: 3 })).toHaveLength(3);
    } finally {
      stores.close();
    }
  });
});
