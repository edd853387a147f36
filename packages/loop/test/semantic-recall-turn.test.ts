import { type PriceTable, type ProfileFact, type RecallSource, utcDay } from "@alma-harness/core";
import { type SemanticRanking, semanticRecall } from "@alma-harness/memory";
import { ConceptEmbedding, inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { RECALL_LABEL } from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, PRICES, SCOPE, TEST_TRAIL_KEY } from "./harness.js";

const WITH_EMBED: PriceTable = {
  ...PRICES,
  models: { ...PRICES.models, "embed-small": { rates: { input: 100, output: 0 } } },
};

function fact(factId: string, key: string, text: string, at: number): ProfileFact {
  return {
    scope: SCOPE,
    factId,
    key,
    text,
    source: { sessionId: "s0", turnId: `t-${factId}`, at },
    sensitivity: "internal",
    confidence: 0.9,
  };
}

/** The engine's own GovernedCalls (same journal, settlements, spend, audit, clock) handed to the source after the harness is built. */
function turnWithSemanticRecall(prices: PriceTable) {
  let inner: RecallSource | undefined;
  const source: RecallSource = {
    name: "memory.semantic",
    recall: (q) => (inner as RecallSource).recall(q),
  };
  const h = harness({
    prices,
    recall: { source, facts: 1, episodes: 0 },
    script: [scriptedText("ok")],
  });
  const stores = inMemoryMemoryStores();
  const embedding = new ConceptEmbedding();
  const rankings: SemanticRanking[] = [];
  inner = semanticRecall({
    stores,
    embedding,
    calls: h.calls,
    model: "embed-small",
    trailKey: TEST_TRAIL_KEY,
    onRanking: (r) => rankings.push(r),
  });
  return { h, stores, embedding, rankings };
}

const recalled = (h: ReturnType<typeof harness>) =>
  (
    h.model.requests[0]?.messages
      .at(-1)
      ?.blocks.find(
        (b) => b.type === "text" && b.origin === "harness" && b.text.startsWith(RECALL_LABEL),
      ) as { text: string } | undefined
  )?.text;

describe("a turn recalling through semanticRecall", () => {
  it("sees the fact the paraphrase means, and the embedding is settled on the turn's session beside the main call", async () => {
    const t = turnWithSemanticRecall(WITH_EMBED);
    await t.stores.profiles.put(
      fact("f-pen", "allergy.penicillin", "Gets a severe reaction from penicillin", 1_000),
    );
    await t.stores.profiles.put(
      fact("f-coffee", "pref.coffee", "Likes to take coffee with breakfast", 2_000),
    );
    completed(await t.h.run({ input: [{ type: "text", text: "Which medicine can I not take?" }] }));
    expect(t.rankings).toEqual(["semantic"]);
    const text = recalled(t.h) as string;
    expect(text).toContain("penicillin");
    expect(text).not.toContain("coffee");
    const costs = t.h.trail("cost");
    expect(costs).toHaveLength(2);
    const spent = await t.h.spend.peek(SCOPE, "s1", utcDay(t.h.clock.now()));
    expect(spent.sessionMicros).toBe(costs.reduce((n, c) => n + c.usdMicros, 0));
  });

  it("an unpriced embedding model: the turn recalls in the lexical order and makes no embedding call", async () => {
    const t = turnWithSemanticRecall(PRICES);
    await t.stores.profiles.put(
      fact("f-pen", "allergy.penicillin", "Gets a severe reaction from penicillin", 1_000),
    );
    await t.stores.profiles.put(
      fact("f-coffee", "pref.coffee", "Likes to take coffee with breakfast", 2_000),
    );
    completed(await t.h.run({ input: [{ type: "text", text: "Which medicine can I not take?" }] }));
    expect(t.rankings).toEqual(["lexical_unpriced"]);
    expect(t.embedding.requests).toHaveLength(0);
    expect(recalled(t.h)).toContain("coffee");
  });
});
