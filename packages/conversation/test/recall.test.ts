import type { RecallQuery, RecallResult, RecallSource } from "@alma-harness/core";
import { storeRecall } from "@alma-harness/memory";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { RECALL_LABEL } from "@alma-harness/loop";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, setup } from "./harness.js";

const LEARNED = JSON.stringify({
  episode: "The person said they are allergic to penicillin.",
  facts: [{ key: "allergy.penicillin", text: "Allergic to penicillin.", confidence: 0.9 }],
});
const SMALL = {
  clientId: "small",
  model: "fake-small",
  maxOutputTokens: 256,
  cache: false as const,
};
const MAIN = { clientId: "fake", model: "fake-main", maxOutputTokens: 512, cache: false as const };

function withMemory(
  script: number,
  smallScript: ReturnType<typeof scriptedText>[],
  over: { recall?: Partial<{ source: RecallSource; recallTimeoutMs: number }> } = {},
) {
  const memory = inMemoryMemoryStores();
  const t = setup({
    script: Array.from({ length: script }, (_, i) => scriptedText(`answer ${i}`)),
    smallScript,
    config: {
      policy: { resolve: (intent) => (intent.task === "extraction" ? SMALL : MAIN) },
      recall: { source: storeRecall(memory), ...over.recall },
      extraction: { tier: "fast", stores: memory },
    },
  });
  return { t, memory };
}

const textOf = (t: ReturnType<typeof setup>, i: number) => JSON.stringify(t.model.requests[i]);

describe("recall and extraction through the conversation runner", () => {
  it("what a patient said in one session is recalled in the next, for that patient only", async () => {
    const { t, memory } = withMemory(3, [
      scriptedText(LEARNED),
      scriptedText(JSON.stringify({ episode: null, facts: [] })),
      scriptedText(JSON.stringify({ episode: null, facts: [] })),
    ]);
    const first = await t.runner.runTurn({
      ...t.request("k1", "I am allergic to penicillin.", "session-1"),
    });
    expect(first.status).toBe("completed");
    expect((await memory.profiles.list(SCOPE)).items.map((f) => f.text)).toEqual([
      "Allergic to penicillin.",
    ]);
    const second = await t.runner.runTurn(
      t.request("k2", "Which antibiotic can I take for my allergy?", "session-2"),
    );
    expect(second.status).toBe("completed");
    expect(textOf(t, 1)).toContain("allergy.penicillin");
    expect(textOf(t, 1)).toContain(RECALL_LABEL.slice(0, 20));
    const other = await t.runner.runTurn({
      ...t.request("k3", "Which antibiotic can I take for my allergy?", "session-3"),
      scope: { org: SCOPE.org, uid: "u2" },
    });
    expect(other.status).toBe("completed");
    expect(textOf(t, 2)).not.toContain("penicillin");
    expect(textOf(t, 2)).not.toContain(RECALL_LABEL.slice(0, 20));
    // The recall record, by count and size, under the session's pseudonym; never the text.
    const page = await t.runner.trails(SCOPE, { sessionId: "session-2", trail: "recall" });
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ trail: "recall", source: "memory", facts: 1 });
    expect(JSON.stringify(page.items)).not.toContain("penicillin");
    expect(JSON.stringify(page.items)).not.toContain("session-2");
  });

  it("a replay under the same key never recalls or extracts again", async () => {
    const queries: RecallQuery[] = [];
    const source: RecallSource = {
      name: "counted",
      recall: async (q) => {
        queries.push(q);
        return { episodes: [], facts: [] };
      },
    };
    const { t } = withMemory(1, [scriptedText(LEARNED)], { recall: { source } });
    const a = await t.runner.runTurn(t.request("k1"));
    const b = await t.runner.runTurn(t.request("k1"));
    expect(a.status).toBe("completed");
    expect(b).toMatchObject({ status: "completed", replayed: true });
    expect(queries).toHaveLength(1);
    expect(t.small.calls).toBe(1);
  });

  it("a request cancelled before it runs never reaches the source", async () => {
    const queries: RecallQuery[] = [];
    const source: RecallSource = {
      name: "counted",
      recall: async (q) => {
        queries.push(q);
        return { episodes: [], facts: [] };
      },
    };
    const { t } = withMemory(1, [], { recall: { source } });
    const control = new AbortController();
    control.abort();
    const view = await t.runner.runTurn({ ...t.request("k1"), signal: control.signal });
    // A pre-aborted request is never admitted (seed 002): nothing ran, recall included.
    expect(view).toEqual({ status: "not_admitted", reason: "cancelled" });
    expect(queries).toEqual([]);
    expect(t.model.calls).toBe(0);
  });

  it("a source that hangs past recallTimeoutMs: the turn completes without recall, degraded on the trail", async () => {
    const queries: RecallQuery[] = [];
    const source: RecallSource = {
      name: "hanging",
      recall: (q) => {
        queries.push(q);
        return new Promise<RecallResult>(() => undefined);
      },
    };
    const { t } = withMemory(1, [scriptedText(JSON.stringify({ episode: null, facts: [] }))], {
      recall: { source, recallTimeoutMs: 300 },
    });
    const running = t.runner.runTurn(t.request("k1"));
    for (let i = 0; i < 200 && queries.length === 0; i++) await Promise.resolve();
    expect(queries).toHaveLength(1);
    t.clock.advance(300);
    const view = await running;
    expect(view.status).toBe("completed");
    const page = await t.runner.trails(SCOPE, { sessionId: "s1", trail: "recall" });
    expect(page.items[0]).toMatchObject({ items: 0, degradedTiers: ["unavailable"] });
  });

  it("an extraction whose answer is invalid writes nothing, and the view is the same completed view", async () => {
    const { t, memory } = withMemory(1, [scriptedText("{ not json")]);
    const view = await t.runner.runTurn(t.request("k1", "I am allergic to penicillin."));
    expect(view.status).toBe("completed");
    expect(view.status === "completed" && view.result.reply).toEqual([
      { type: "text", text: "answer 0" },
    ]);
    expect((await memory.profiles.list(SCOPE)).items).toEqual([]);
    expect((await memory.episodes.list(SCOPE)).items).toEqual([]);
  });
});
