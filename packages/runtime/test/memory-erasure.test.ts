import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sessionPseudonym } from "@alma-harness/core";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { storeRecall } from "@alma-harness/memory";
import { sqlite } from "@alma-harness/runtime";
import { canariesOf, needlesOf, scanFiles, scanSqlite } from "@alma-harness/testing";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig } from "./open.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const KEY = "m".repeat(32);

describe("createMemoryErasure on the SQLite composition (rt.memory)", () => {
  it("erases a session's memory, transcript, labels and results: storeRecall finds nothing, no table and no byte of the files holds it, one pseudonymous event records it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alma-memerase-"));
    dirs.push(dir);
    const path = join(dir, "alma.db");
    const model = new FakeModelClient();
    const rt = sqlite({
      ...clinicConfig(model),
      trailKey: KEY,
      store: { path, rootResults: "attached" },
    });
    const scope = { org: "clinic-mem", uid: "patient-1" };
    const [alpha, bravo] = [canariesOf("alpha"), canariesOf("bravo")];
    try {
      for (const c of [alpha, bravo]) {
        model.push(scriptedText(`Noted, ${c.patient}.`));
        const view = await rt.runner.runTurn({
          scope,
          sessionId: c.sessionId,
          idempotencyKey: "k1",
          input: `I am ${c.patient}, allergic to penicillin; key ${c.apiKey}`,
          intent: { tier: "balanced", sensitivity: "internal" },
        });
        expect(view.status).toBe("completed");
        await rt.stores.labels.put(scope, c.sessionId, { mrn: c.label });
        const source = { sessionId: c.sessionId, turnId: "turn-1", at: Date.UTC(2026, 0, 1) };
        await rt.stores.episodes.put({
          scope,
          episodeId: `ep-${c.label}`,
          source,
          sensitivity: "confidential",
          summary: `${c.patient} is allergic to penicillin (${c.query}).`,
        });
        await rt.stores.profiles.put({
          scope,
          factId: `f-${c.label}`,
          key: `allergy.${c.label.toLowerCase()}`,
          text: `${c.patient}: penicillin allergy.`,
          source,
          sensitivity: "confidential",
          confidence: 1,
        });
      }
      await rt.stores.barrier?.commit();
      const recall = storeRecall(rt.stores);
      const recalled = async () => {
        const r = await recall.recall({
          scope,
          sessionId: "next",
          text: "penicillin allergy",
          ceiling: "restricted",
          limits: { episodes: 10, facts: 10 },
          signal: new AbortController().signal,
        });
        return [...r.episodes, ...r.facts].map((x) => x.source.sessionId).sort();
      };
      expect(await recalled()).toEqual(
        [alpha.sessionId, alpha.sessionId, bravo.sessionId, bravo.sessionId].sort(),
      );
      const files = [
        path,
        `${path}-wal`,
        join(dir, "alma.root-results.db"),
        join(dir, "alma.root-results.db-wal"),
      ];
      expect(
        scanFiles(files, needlesOf(alpha)).length,
        "the byte scan sees the planted canaries",
      ).toBeGreaterThan(0);

      expect(await rt.memory.eraseSession(scope, alpha.sessionId)).toEqual({
        target: "session",
        episodes: 1,
        facts: 1,
        fencedAdmissions: 0,
      });
      expect(await recalled()).toEqual([bravo.sessionId, bravo.sessionId]);
      const db = new Database(path, { readonly: true });
      try {
        db.prepare("ATTACH DATABASE ? AS root").run(join(dir, "alma.root-results.db"));
        expect(
          scanSqlite(db, needlesOf(alpha), ["main", "root"]),
          "no table holds the erased session",
        ).toEqual([]);
        expect(
          scanSqlite(db, needlesOf(bravo), ["main", "root"]).length,
          "the other session is kept",
        ).toBeGreaterThan(0);
      } finally {
        db.close();
      }
      expect(scanFiles(files, needlesOf(alpha)), "no byte of the files holds it").toEqual([]);
      const erasures = (await rt.stores.audit.query(scope, { trail: "lifecycle" })).items.filter(
        (e) => e.trail === "lifecycle" && e.action === "erasure.completed",
      );
      expect(
        erasures.map((e) => [e.sessionId, e.trail === "lifecycle" ? e.detail : undefined]),
      ).toEqual([[sessionPseudonym(KEY, scope, alpha.sessionId), "session:1:1:0"]]);
    } finally {
      await rt.close();
    }
  });
});
