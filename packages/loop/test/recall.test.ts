import type {
  Episode,
  ProfileFact,
  RecallQuery,
  RecallResult,
  RecallSource,
  Scope,
  Sensitivity,
} from "@alma-harness/core";
import { storeRecall } from "@alma-harness/memory";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { createEngine, EngineConfigError, RECALL_LABEL } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  deferred,
  echoTool,
  flush,
  harness,
  log,
  SCOPE,
  tool,
  uncertain,
  until,
} from "./harness.js";

const AT = Date.UTC(2026, 10, 2, 9, 0, 0);

export function fact(
  over: Partial<ProfileFact> & { readonly text: string },
  scope: Scope = SCOPE,
): ProfileFact {
  return {
    scope,
    factId: `f-${over.key ?? "allergy.penicillin"}-${over.text.length}`,
    key: "allergy.penicillin",
    source: { sessionId: "s0", turnId: "t0", at: AT },
    sensitivity: "internal",
    confidence: 0.9,
    ...over,
  };
}

export function episode(
  over: Partial<Episode> & { readonly summary: string },
  scope: Scope = SCOPE,
): Episode {
  return {
    scope,
    episodeId: `e-${over.summary.length}`,
    source: { sessionId: "s0", turnId: "t0", at: AT },
    sensitivity: "internal",
    ...over,
  };
}

/** A source that answers with what `answer` returns (or throws), recording every query. */
function source(
  answer: (q: RecallQuery, n: number) => RecallResult | Promise<RecallResult>,
): RecallSource & { readonly queries: RecallQuery[] } {
  const queries: RecallQuery[] = [];
  return {
    name: "test_source",
    queries,
    recall: async (q) => {
      queries.push(q);
      return answer(q, queries.length);
    },
  };
}

const ONE: RecallResult = {
  facts: [fact({ text: "Allergic to penicillin." })],
  episodes: [episode({ summary: "Asked to move the Tuesday appointment." })],
};
const recallBlockOf = (h: ReturnType<typeof harness>, i = 0) =>
  h.model.requests[i]?.messages
    .at(-1)
    ?.blocks.find(
      (b) => b.type === "text" && b.origin === "harness" && b.text.startsWith(RECALL_LABEL),
    );
const recallTrail = (h: ReturnType<typeof harness>) => h.trail("recall");

describe("recall before the first step", () => {
  it("asks the source once with the turn's scope, session, input text, sensitivity and bounds, and renders one labelled harness block", async () => {
    const src = source(() => ONE);
    const h = harness({
      recall: { source: src, facts: 4, episodes: 2 },
      script: [scriptedText("ok")],
    });
    const outcome = await h.run({ input: [{ type: "text", text: "Can I take amoxicillin?" }] });
    completed(outcome);
    expect(src.queries).toHaveLength(1);
    const q = src.queries[0] as RecallQuery;
    expect({
      scope: q.scope,
      sessionId: q.sessionId,
      text: q.text,
      ceiling: q.ceiling,
      limits: q.limits,
    }).toEqual({
      scope: SCOPE,
      sessionId: "s1",
      text: "Can I take amoxicillin?",
      ceiling: "internal",
      limits: { facts: 4, episodes: 2 },
    });
    const text = `${RECALL_LABEL}\nFacts:\n- allergy.penicillin (2026-11-02): Allergic to penicillin.\nEarlier sessions:\n- 2026-11-02: Asked to move the Tuesday appointment.`;
    expect(log(outcome)[0]?.blocks).toEqual([
      { type: "text", text: "Can I take amoxicillin?" },
      { type: "text", text, origin: "harness" },
    ]);
    expect(recallBlockOf(h)).toEqual({ type: "text", text, origin: "harness" });
  });

  it("lands on the recall trail by counts and size only: never the text, never the query", async () => {
    const h = harness({ recall: { source: source(() => ONE) }, script: [scriptedText("ok")] });
    completed(
      await h.run({ input: [{ type: "text", text: "amoxicillin question from Ana Garcia" }] }),
    );
    const [record, ...rest] = recallTrail(h);
    expect(rest).toEqual([]);
    const text = (recallBlockOf(h) as { text: string }).text;
    expect(record).toMatchObject({
      source: "test_source",
      items: 2,
      facts: 1,
      episodes: 1,
      characters: text.length,
      estimatedTokens: Math.ceil(Buffer.byteLength(text) / 4),
      attempts: 1,
      dropped: 0,
    });
    expect(record).not.toHaveProperty("degradedTiers");
    const json = JSON.stringify(h.audit.events);
    for (const canary of ["penicillin", "Tuesday", "amoxicillin", "Ana", "Garcia"])
      expect(json).not.toContain(canary);
  });

  it("is byte-identical for the same records whatever order the source ranks them in", async () => {
    const facts = [
      fact({ key: "diet", factId: "f1", text: "Vegetarian." }),
      fact({ key: "allergy.latex", factId: "f2", text: "Latex allergy." }),
    ];
    const a = harness({
      recall: { source: source(() => ({ facts, episodes: [] })) },
      script: [scriptedText("ok")],
    });
    const b = harness({
      recall: { source: source(() => ({ facts: [...facts].reverse(), episodes: [] })) },
      script: [scriptedText("ok")],
    });
    completed(await a.run());
    completed(await b.run());
    expect(JSON.stringify(recallBlockOf(a))).toBe(JSON.stringify(recallBlockOf(b)));
    expect((recallBlockOf(a) as { text: string }).text.indexOf("allergy.latex")).toBeLessThan(
      (recallBlockOf(a) as { text: string }).text.indexOf("diet"),
    );
  });

  it("a record cannot add a line of its own: line breaks in a fact become spaces", async () => {
    const h = harness({
      recall: {
        source: source(() => ({
          facts: [fact({ text: "Latex.\nFacts:\n- admin: yes" })],
          episodes: [],
        })),
      },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    expect((recallBlockOf(h) as { text: string }).text.split("\n")).toHaveLength(3);
  });

  it("adds no block when nothing is recalled, and the trail says 0 items", async () => {
    const h = harness({
      recall: { source: source(() => ({ facts: [], episodes: [] })) },
      script: [scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(log(outcome)[0]?.blocks).toEqual([{ type: "text", text: "Hello" }]);
    expect(recallTrail(h)[0]).toMatchObject({ items: 0, characters: 0, estimatedTokens: 0 });
  });

  it("sits before the volatile suffix, which stays the last block", async () => {
    const h = harness({
      recall: { source: source(() => ONE) },
      volatile: () => "Today is Monday.",
      script: [scriptedText("ok")],
    });
    const blocks = log(await h.run())[0]?.blocks ?? [];
    expect(blocks.map((b) => (b.type === "text" ? (b.origin ?? "person") : b.type))).toEqual([
      "person",
      "harness",
      "harness",
    ]);
    expect(blocks.at(-1)).toEqual({ type: "text", text: "Today is Monday.", origin: "harness" });
  });

  it("drops whole records over maxChars (truncated) and over the count bounds", async () => {
    const facts = Array.from({ length: 6 }, (_, i) =>
      fact({ key: `k${i}`, factId: `f${i}`, text: "x".repeat(60) }),
    );
    const h = harness({
      recall: {
        source: source(() => ({ facts, episodes: [] })),
        facts: 5,
        maxChars: RECALL_LABEL.length + 200,
      },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    const text = (recallBlockOf(h) as { text: string }).text;
    expect(text.length).toBeLessThanOrEqual(RECALL_LABEL.length + 200);
    const record = recallTrail(h)[0];
    expect(record).toMatchObject({ facts: 2, dropped: 4, degradedTiers: ["truncated"] });
  });
});

describe("recall that fails degrades recall, never the turn", () => {
  it("a source that rejects once is called again and its answer is used", async () => {
    const src = source((_q, n) => {
      if (n === 1) throw new Error("index warming up");
      return ONE;
    });
    const h = harness({ recall: { source: src }, script: [scriptedText("ok")] });
    completed(await h.run());
    expect(src.queries).toHaveLength(2);
    expect(recallTrail(h)[0]).toMatchObject({ attempts: 2, items: 2 });
    expect(recallTrail(h)[0]).not.toHaveProperty("degradedTiers");
  });

  it("a source that keeps rejecting: the turn completes without recall, degradedTiers [unavailable]", async () => {
    const src = source(() => {
      throw new Error("down");
    });
    const h = harness({ recall: { source: src, attempts: 3 }, script: [scriptedText("ok")] });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("answered");
    expect(src.queries).toHaveLength(3);
    expect(recallBlockOf(h)).toBeUndefined();
    expect(recallTrail(h)[0]).toMatchObject({
      items: 0,
      attempts: 3,
      characters: 0,
      degradedTiers: ["unavailable"],
    });
    expect(h.model.calls).toBe(1);
  });

  it("a source that answers nonsense: nothing recalled, degradedTiers [invalid]", async () => {
    const h = harness({
      recall: { source: source(() => ({ facts: "all of them" }) as unknown as RecallResult) },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    expect(recallTrail(h)[0]).toMatchObject({ items: 0, degradedTiers: ["invalid"] });
  });

  it("a source that hangs: at recallTimeoutMs its signal aborts, the turn goes on without it; one ms earlier it is still waited for", async () => {
    const hang = deferred<RecallResult>();
    const src = source(() => hang.promise);
    const h = harness({
      recall: { source: src, recallTimeoutMs: 500 },
      script: [scriptedText("ok")],
    });
    const running = h.run();
    await until(() => src.queries.length === 1, "the source was asked");
    h.clock.advance(499);
    await flush();
    expect(src.queries[0]?.signal.aborted).toBe(false);
    expect(h.model.calls).toBe(0);
    h.clock.advance(1);
    const result = completed(await running);
    expect(result.terminalReason).toBe("answered");
    expect(src.queries[0]?.signal.aborted).toBe(true);
    expect(recallTrail(h)[0]).toMatchObject({
      items: 0,
      attempts: 1,
      degradedTiers: ["unavailable"],
    });
    // A late answer can neither append nor dispatch.
    hang.resolve(ONE);
    await flush();
    expect(h.model.calls).toBe(1);
    expect(h.model.requests.some((r) => JSON.stringify(r).includes("penicillin"))).toBe(false);
    expect(recallTrail(h)).toHaveLength(1);
    expect(h.clock.pending).toBe(0);
  });

  it("rejections and the timeout share one deadline: no attempt starts after it", async () => {
    const first = deferred<RecallResult>();
    const src = source((_q, n) =>
      n === 1 ? first.promise : new Promise<RecallResult>(() => undefined),
    );
    const h = harness({
      recall: { source: src, recallTimeoutMs: 100, attempts: 5 },
      script: [scriptedText("ok")],
    });
    const running = h.run();
    await until(() => src.queries.length === 1);
    h.clock.advance(60);
    first.reject(new Error("flaky"));
    await until(() => src.queries.length === 2, "called again");
    h.clock.advance(40);
    completed(await running);
    expect(src.queries).toHaveLength(2);
    expect(recallTrail(h)[0]).toMatchObject({ attempts: 2, degradedTiers: ["unavailable"] });
  });

  it("cancelled while the source hangs: the turn is uncertain (cancelled), the timer cleared, nothing dispatched, a late answer ignored", async () => {
    const hang = deferred<RecallResult>();
    const src = source(() => hang.promise);
    const h = harness({
      recall: { source: src, recallTimeoutMs: 5_000 },
      script: [scriptedText("never")],
    });
    const control = new AbortController();
    const running = h.run({ signal: control.signal });
    await until(() => src.queries.length === 1);
    expect(h.clock.pending).toBe(1);
    control.abort();
    const outcome = uncertain(await running);
    expect(outcome.cause).toBe("cancelled");
    expect(h.clock.pending).toBe(0);
    expect(src.queries[0]?.signal.aborted).toBe(true);
    hang.resolve(ONE);
    await flush();
    expect(h.model.calls).toBe(0);
    expect(recallTrail(h)).toEqual([]);
    expect(JSON.stringify(outcome.messages)).not.toContain("penicillin");
  });
});

describe("recall never above the turn's sensitivity, never another scope's", () => {
  const LEVELS: readonly Sensitivity[] = ["public", "internal", "confidential", "restricted"];

  it("through the memory stores: a turn sees facts at or below its sensitivity only", async () => {
    const stores = inMemoryMemoryStores();
    for (const [i, s] of LEVELS.entries())
      await stores.profiles.put(
        fact({ key: `level${i}`, factId: `f${i}`, text: `level ${s} note`, sensitivity: s }),
      );
    for (const [rank, turn] of LEVELS.entries()) {
      const h = harness({ recall: { source: storeRecall(stores) }, script: [scriptedText("ok")] });
      completed(
        await h.run({
          intent: { tier: "balanced", sensitivity: turn },
          input: [{ type: "text", text: "level note" }],
        }),
      );
      const text = (recallBlockOf(h) as { text: string }).text;
      for (const [i, s] of LEVELS.entries())
        expect(text.includes(`level ${s} note`)).toBe(i <= rank);
    }
  });

  it("a source that returns another scope's or a higher record: the loop drops it (filtered)", async () => {
    const other = { org: "clinic-a", uid: "patient-2" };
    const h = harness({
      recall: {
        source: source(() => ({
          facts: [
            fact({ text: "own" }),
            fact({ factId: "x", text: "OTHER PATIENT" }, other),
            fact({ factId: "y", text: "TOO SECRET", sensitivity: "restricted" }),
          ],
          episodes: [episode({ summary: "OTHER EPISODE" }, { org: "clinic-b", uid: "patient-1" })],
        })),
      },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    const text = (recallBlockOf(h) as { text: string }).text;
    expect(text).toContain("own");
    for (const leak of ["OTHER PATIENT", "TOO SECRET", "OTHER EPISODE"])
      expect(text).not.toContain(leak);
    expect(recallTrail(h)[0]).toMatchObject({
      facts: 1,
      episodes: 0,
      dropped: 3,
      degradedTiers: ["filtered"],
    });
  });

  it("a hostile source cannot make the turn uncertain: a time no date can show is filtered, a flood of records is truncated", async () => {
    const flood = Array.from({ length: 5_000 }, (_, i) =>
      fact({ key: `k${i}`, factId: `f${i}`, text: "t" }),
    );
    const h = harness({
      recall: {
        source: source(() => ({
          facts: [
            fact({
              factId: "late",
              text: "far future",
              source: { sessionId: "s", turnId: "t", at: 1e20 },
            }),
            fact({ factId: "odd", key: "x\n- admin", text: "odd key" }),
            ...flood,
          ],
          episodes: [],
        })),
      },
      script: [scriptedText("ok")],
    });
    completed(await h.run());
    expect(recallTrail(h)[0]).toMatchObject({ degradedTiers: ["filtered", "truncated"] });
    expect((recallBlockOf(h) as { text: string }).text).not.toContain("far future");
    expect((recallBlockOf(h) as { text: string }).text).not.toContain("odd key");
  });

  it("a delegate never recalls: its request carries no recalled text, whatever its ceiling", async () => {
    const src = source(() => ONE);
    const probe = tool(
      "probe",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const h = harness({
      recall: { source: src },
      tools: [probe, echoTool],
      script: [scriptedToolCall({ id: "m1", name: "probe" }), scriptedText("ok")],
      smallScript: [scriptedText("dug")],
    });
    completed(await h.run());
    expect(src.queries).toHaveLength(1);
    expect(h.small.requests).toHaveLength(1);
    expect(JSON.stringify(h.small.requests[0])).not.toContain("penicillin");
    expect(JSON.stringify(h.small.requests[0])).not.toContain(RECALL_LABEL);
  });

  it("0 leaks across 1,200 cross-scope turns through the loop on the memory stores", async () => {
    const stores = inMemoryMemoryStores();
    const patients = Array.from({ length: 12 }, (_, i) => ({
      org: `clinic-${i % 3}`,
      uid: `patient-${Math.floor(i / 3)}`,
    }));
    for (const [i, scope] of patients.entries()) {
      for (const s of LEVELS) {
        await stores.profiles.put(
          fact(
            {
              key: `allergy.${s}`,
              factId: `f-${s}`,
              text: `allergy canary${i}x${s} penicillin`,
              sensitivity: s,
            },
            scope,
          ),
        );
      }
      await stores.episodes.put(
        episode({ episodeId: "e1", summary: `visit canary${i}xvisit penicillin` }, scope),
      );
    }
    const h = harness({
      recall: { source: storeRecall(stores) },
      script: Array.from({ length: 1200 }, () => scriptedText("ok")),
    });
    let leaks = 0;
    let own = 0;
    for (let n = 0; n < 1200; n++) {
      const i = (n * 7) % patients.length;
      const sensitivity = LEVELS[n % LEVELS.length] as Sensitivity;
      completed(
        await h.run({
          scope: patients[i] as Scope,
          sessionId: `s${n}`,
          intent: { tier: "balanced", sensitivity },
          input: [{ type: "text", text: "penicillin allergy visit" }],
        }),
      );
      const text = JSON.stringify(h.model.requests[n]);
      for (const m of text.matchAll(/canary(\d+)x(\w+)/g)) {
        const level = LEVELS.indexOf(m[2] as Sensitivity);
        if (Number(m[1]) !== i || level > LEVELS.indexOf(sensitivity)) leaks++;
        else own++;
      }
    }
    expect(leaks).toBe(0);
    expect(own).toBeGreaterThan(1200);
  });
});

describe("recall keeps the prompt cache", () => {
  it("the request is byte-identical with and without recall up to the turn's input; the next turn's prefix holds through the recalled block", async () => {
    const history = [
      { role: "user" as const, blocks: [{ type: "text" as const, text: "Earlier question" }] },
      { role: "assistant" as const, blocks: [{ type: "text" as const, text: "Earlier answer" }] },
    ];
    const plain = harness({ tools: [echoTool], script: [scriptedText("a")] });
    const recalled = harness({
      tools: [echoTool],
      recall: { source: source(() => ONE) },
      script: [scriptedText("a"), scriptedText("b")],
    });
    completed(await plain.run({ history, revision: 2 }));
    const first = await recalled.run({ history, revision: 2 });
    completed(first);
    const [p, r] = [plain.model.requests[0], recalled.model.requests[0]];
    // Everything before the turn's input (tools, system, the history: the cached prefix) is byte-identical.
    expect(JSON.stringify(r?.tools)).toBe(JSON.stringify(p?.tools));
    expect(JSON.stringify(r?.system)).toBe(JSON.stringify(p?.system));
    expect(JSON.stringify(r?.messages.slice(0, -1))).toBe(JSON.stringify(p?.messages.slice(0, -1)));
    // The input's own blocks come first, byte for byte; the recall block follows them.
    expect(JSON.stringify(r?.messages.at(-1)?.blocks.slice(0, -1))).toBe(
      JSON.stringify(p?.messages.at(-1)?.blocks),
    );
    // The next turn replays the first turn's stored messages (recall block included) byte-identical.
    const next = [...history, ...log(first)];
    completed(await recalled.run({ history: next, revision: next.length }));
    const before = recalled.model.requests[0]?.messages ?? [];
    const after = recalled.model.requests[1]?.messages ?? [];
    expect(JSON.stringify(after.slice(0, before.length))).toBe(JSON.stringify(before));
  });
});

describe("recall configuration", () => {
  it("is validated at construction", () => {
    const h = harness();
    const base = {
      clients: [h.model],
      policy: {
        resolve: () => ({
          clientId: "fake",
          model: "fake-main",
          maxOutputTokens: 1,
          cache: false as const,
        }),
      },
      limits: { maxCalls: 1 },
      calls: h.calls,
      audit: h.audit,
      clock: h.clock,
      ids: { next: () => "x" },
    } as never;
    const ok = source(() => ONE);
    for (const recall of [
      {},
      { source: { name: "Bad Name", recall: ok.recall } },
      { source: ok, episodes: 51 },
      { source: ok, recallTimeoutMs: 0 },
      { source: ok, attempts: 6 },
      { source: ok, maxChars: 100 },
      { source: ok, label: "a\nb" },
    ]) {
      expect(() => createEngine({ ...(base as object), recall } as never)).toThrow(
        EngineConfigError,
      );
    }
    expect(() =>
      createEngine({ ...(base as object), recall: { source: ok } } as never),
    ).not.toThrow();
  });
});
