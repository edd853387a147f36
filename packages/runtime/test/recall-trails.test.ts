import type { AuditRecord, RecallSource, Scope } from "@alma-harness/core";
import { storeRecall } from "@alma-harness/memory";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import type { Runtime } from "@alma-harness/runtime";
import { CANARIES, canariesIn } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { clinicConfig, compositions, skipNote } from "./open.js";

const SCOPE: Scope = { org: "clinic-a", uid: "u1" };
const LEARNED = JSON.stringify({
  episode: `${CANARIES.patientName} said they are allergic to penicillin.`,
  facts: [
    {
      key: "allergy.penicillin",
      text: `${CANARIES.patientName} is allergic to penicillin.`,
      confidence: 0.9,
    },
  ],
});

async function allRecords(rt: Runtime, scope: Scope): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await rt.stores.audit.query(scope, { limit: 500, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return out;
}

/**
 * Issue 18 on every store: the recall record (counts, sizes, closed degraded tiers), the
 * extraction's governed call (kind `extraction` in the journal, the settlements and the trails) and
 * its `memory.extraction` lifecycle record are accepted by each store's audit log, and none of
 * them holds the recalled or extracted text, the query or the session id.
 */
for (const [name, open, enabled] of compositions("recall")) {
  describe.skipIf(!enabled)(
    `recall and extraction on the ${name} stores${skipNote(enabled)}`,
    () => {
      it("a fact extracted in one session is recalled in the next; no canary reaches any audit record", async () => {
        const memory = inMemoryMemoryStores();
        const model = new FakeModelClient([
          scriptedText("Noted."),
          scriptedText(LEARNED),
          scriptedText("Yes, penicillin."),
          scriptedText(JSON.stringify({ episode: null, facts: [] })),
        ]);
        const rt = await open(
          clinicConfig(model, {
            recall: { source: storeRecall(memory) },
            extraction: { tier: "fast", stores: memory },
          }),
        );
        try {
          const ask = (key: string, session: string, input: string) =>
            rt.runner.runTurn({
              scope: SCOPE,
              sessionId: session,
              idempotencyKey: key,
              input,
              intent: { tier: "balanced", sensitivity: "internal" },
            });
          expect(
            (
              await ask(
                "k1",
                CANARIES.phoneSessionId,
                `I am ${CANARIES.patientName}, allergic to penicillin.`,
              )
            ).status,
          ).toBe("completed");
          const second = await ask(
            "k2",
            `${CANARIES.phoneSessionId}-2`,
            "Do you remember my penicillin allergy?",
          );
          expect(
            second.status === "completed" && second.result.receipts.map((r) => r.kind),
          ).toEqual(["main", "extraction"]);
          // The recalled fact reached the second request (content), so the scan is not vacuous.
          expect(canariesIn(JSON.stringify(model.requests[2]))).not.toEqual([]);
          const records = await allRecords(rt, SCOPE);
          for (const record of records) expect(canariesIn(JSON.stringify(record))).toEqual([]);
          const recall = records.filter((r) => r.trail === "recall");
          expect(recall).toHaveLength(2);
          expect(recall[1]).toMatchObject({
            source: "memory",
            items: 2,
            facts: 1,
            episodes: 1,
            attempts: 1,
            dropped: 0,
          });
          expect((recall[1] as { estimatedTokens: number }).estimatedTokens).toBeGreaterThan(0);
          expect(
            records
              .filter((r) => r.trail === "lifecycle" && r.action === "memory.extraction")
              .map((r) => (r as { detail?: string }).detail),
          ).toEqual(["stored:1:1", "nothing:0:0"]);
          expect(
            records.filter((r) => r.trail === "routing" && r.kind === "extraction"),
          ).toHaveLength(4);
        } finally {
          await rt.close();
        }
      });

      it("a source that keeps failing: the turn completes without recall and the store keeps degradedTiers [unavailable]", async () => {
        let calls = 0;
        const failing: RecallSource = {
          name: "down",
          recall: async () => {
            calls += 1;
            throw new Error("index offline");
          },
        };
        const rt = await open(
          clinicConfig(new FakeModelClient([scriptedText("Hello.")]), {
            recall: { source: failing, attempts: 2 },
          }),
        );
        try {
          const view = await rt.runner.runTurn({
            scope: SCOPE,
            sessionId: "s1",
            idempotencyKey: "k1",
            input: "hello",
            intent: { tier: "balanced", sensitivity: "internal" },
          });
          expect(view.status === "completed" && view.result.terminalReason).toBe("answered");
          expect(calls).toBe(2);
          const recall = (await allRecords(rt, SCOPE)).filter((r) => r.trail === "recall");
          expect(recall).toEqual([
            expect.objectContaining({
              source: "down",
              items: 0,
              attempts: 2,
              characters: 0,
              degradedTiers: ["unavailable"],
            }),
          ]);
        } finally {
          await rt.close();
        }
      });
    },
  );
}
