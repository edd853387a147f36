import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  episodeOf,
  factOf,
  memoryContract,
  SCOPE_A,
  scanFiles,
  scanSqlite,
} from "@alma-harness/testing";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStores, type SqliteStores } from "../src/index.js";
import { ftsQuery } from "../src/memory.js";

const dir = mkdtempSync(join(tmpdir(), "alma-sqlite-memory-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

const open = (commits: "each" | "grouped" = "each"): SqliteStores & { readonly path: string } => {
  n += 1;
  const path = join(dir, `db-${n}`, "alma.db");
  return { ...createSqliteStores({ path, synchronous: "normal", commits }), path };
};
const fixture = (commits: "each" | "grouped") => () => {
  const s = open(commits);
  return {
    episodes: s.episodes,
    profiles: s.profiles,
    erasure: s.memoryErasure,
    close: () => s.close(),
  };
};

memoryContract("sqlite", fixture("each"), { describe, it, expect });
memoryContract("sqlite grouped", fixture("grouped"), { describe, it, expect });

describe("sqlite memory: the FTS5 index", () => {
  it("a query's terms are quoted phrases OR'ed (a prefix from 4 characters): no operator reaches FTS5", () => {
    expect(ftsQuery(["pen", "penicillin", "near", "or"])).toBe(
      '"pen" OR "penicillin"* OR "near"* OR "or"',
    );
  });

  it("is on schema version 8, contentless, with secure-delete on", () => {
    const s = open();
    try {
      expect(s.schema.main).toBeGreaterThanOrEqual(8);
      const db = new Database(s.path, { readonly: true });
      try {
        const cfg = db.prepare("SELECT k, v FROM memory_episodes_fts_config").all() as {
          k: string;
          v: unknown;
        }[];
        expect(cfg.find((r) => r.k === "secure-delete")?.v).toBe(1);
        expect(
          db
            .prepare("SELECT name FROM sqlite_master WHERE name = 'memory_episodes_fts_content'")
            .get(),
        ).toBeUndefined();
      } finally {
        db.close();
      }
    } finally {
      s.close();
    }
  });

  it("after eraseMemory and remove, no table and no byte of the file or its WAL holds the record's words or its session id", async () => {
    const s = open();
    const word = "xylophonequackenbush";
    const sessionId = "+15550009009";
    try {
      await s.episodes.put(
        episodeOf("ep-1", {
          summary: `Told us ${word} is allergic.`,
          source: { sessionId, turnId: "t", at: 1 },
        }),
      );
      await s.profiles.put(
        factOf("f-1", { text: `Allergy: ${word}.`, source: { sessionId, turnId: "t", at: 1 } }),
      );
      await s.profiles.put(
        factOf("f-2", {
          key: "diet.x",
          text: `Diet ${word}zz.`,
          source: { sessionId: "s-other", turnId: "t", at: 1 },
        }),
      );
      const files = [s.path, `${s.path}-wal`, `${s.path}-shm`];
      expect(
        scanFiles(files, [word]).length,
        "the byte scan sees the planted word",
      ).toBeGreaterThan(0);
      expect(await s.memoryErasure.eraseMemory({ scope: SCOPE_A, sessionId })).toEqual({
        episodes: 1,
        facts: 1,
      });
      expect(await s.profiles.remove(SCOPE_A, "f-2")).toBe(true);
      const db = new Database(s.path, { readonly: true });
      try {
        expect(scanSqlite(db, [word, sessionId])).toEqual([]);
      } finally {
        db.close();
      }
      expect(scanFiles(files, [word, sessionId]).map((h) => `${h.where} ${h.needle}`)).toEqual([]);
      expect(
        await s.episodes.search(SCOPE_A, { text: word, ceiling: "restricted", limit: 5 }),
      ).toEqual([]);
    } finally {
      s.close();
    }
  });
});
