import type { Scope } from "@alma-harness/core";
import { ConceptEmbedding } from "@alma-harness/memory/testing";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { clinicConfig, compositions, skipNote } from "./open.js";

const SCOPE: Scope = { org: "clinic-a", uid: "u1" };
const OTHER: Scope = { org: "clinic-a", uid: "u2" };
const PRICES = {
  version: "p1",
  models: {
    demo: { rates: { input: 3, output: 15 } },
    "embed-small": { rates: { input: 100, output: 0 } },
  },
};
const source = (at: number) => ({ sessionId: "earlier", turnId: "t0", at });

/**
 * Issue 18, the optional embedding seam on every composition: `memory.recall.embedding` ranks the
 * runtime's own memory stores by meaning, the embedding a governed call over the runtime's own
 * stores (its receipt in the settlements, its spend on the session beside the turn's).
 */
for (const [name, open, enabled] of compositions("semantic_recall")) {
  describe.skipIf(!enabled)(`semantic recall on the ${name} stores${skipNote(enabled)}`, () => {
    it("a paraphrase recalls the fact it means, never another patient's; the embedding is priced and settled on the session", async () => {
      const model = new FakeModelClient([scriptedText("Penicillin, as you told us.")]);
      const embedding = new ConceptEmbedding();
      const rt = await open(
        clinicConfig(model, {
          prices: PRICES,
          memory: {
            recall: {
              facts: 1,
              episodes: 0,
              embedding: { client: embedding, model: "embed-small" },
            },
          },
        }),
      );
      try {
        const put = (scope: Scope, factId: string, key: string, text: string, at: number) =>
          rt.stores.profiles.put({
            scope,
            factId,
            key,
            text,
            source: source(at),
            sensitivity: "internal",
            confidence: 0.9,
          });
        await put(
          SCOPE,
          "f-pen",
          "allergy.penicillin",
          "Gets a severe reaction from penicillin",
          1_000,
        );
        await put(SCOPE, "f-coffee", "pref.coffee", "Likes to take coffee with breakfast", 2_000);
        await put(OTHER, "f-other", "allergy.aspirin", "Reacts badly to aspirin", 3_000);
        const view = await rt.runner.runTurn({
          scope: SCOPE,
          sessionId: "today",
          idempotencyKey: "k1",
          input: "Which medicine can I not take?",
          intent: { tier: "balanced", sensitivity: "internal" },
        });
        expect(view.status).toBe("completed");
        const sent = JSON.stringify(model.requests[0]);
        expect(sent).toContain("penicillin");
        expect(sent).not.toContain("coffee");
        expect(sent).not.toContain("aspirin");
        // What reached the embedding provider: the query and this patient's candidates only.
        expect(JSON.stringify(embedding.requests)).not.toContain("aspirin");
        const costs = (await rt.stores.audit.query(SCOPE, { trail: "cost" })).items as unknown as {
          usdMicros: number;
        }[];
        expect(costs).toHaveLength(2);
        expect(costs.every((c) => c.usdMicros > 0)).toBe(true);
      } finally {
        await rt.close();
      }
    });
  });
}
