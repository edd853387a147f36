import {
  type EpisodeStore,
  type Msg,
  type PriceTable,
  type ProfileStore,
  worstCaseMicros,
} from "@alma-harness/core";
import { inMemoryMemoryStores } from "@alma-harness/memory/testing";
import {
  createEngine,
  EngineConfigError,
  EXTRACTION_INSTRUCTION,
  EXTRACTION_TRANSCRIPT_MAX,
  type TurnResult,
} from "@alma-harness/loop";
import {
  scriptedHang,
  scriptedText,
  scriptedToolCall,
  scriptedTorn,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  echoTool,
  harness,
  type HarnessOptions,
  PRICES,
  SCOPE,
  SMALL_CHOICE,
  tool,
  until,
} from "./harness.js";

const ANSWER = JSON.stringify({
  episode: "The person said they are allergic to penicillin and asked about amoxicillin.",
  facts: [{ key: "allergy.penicillin", text: "Allergic to penicillin.", confidence: 0.95 }],
});

function withExtraction(
  extractionScript: readonly ReturnType<typeof scriptedText>[],
  opts: HarnessOptions = {},
) {
  const stores = inMemoryMemoryStores();
  const h = harness({
    script: [scriptedText("Noted: no penicillin.")],
    smallScript: extractionScript,
    extraction: { tier: "fast", stores },
    ...opts,
  });
  return { h, stores };
}

const extractionTrail = (h: ReturnType<typeof harness>) =>
  h
    .trail("lifecycle")
    .filter((r) => r.action === "memory.extraction")
    .map((r) => r.detail);
const listed = async (stores: ReturnType<typeof inMemoryMemoryStores>) => ({
  episodes: (await stores.episodes.list(SCOPE)).items,
  facts: (await stores.profiles.list(SCOPE)).items,
});
/** The text of a request's first block (the extraction's transcript). */
const textOf = (request: { readonly messages: readonly Msg[] } | undefined): string => {
  const block = request?.messages[0]?.blocks[0];
  return block?.type === "text" ? block.text : "";
};
/** What a host acts on: the status, the reply, the ending. */
const outcomeOf = (r: TurnResult) => ({
  reply: r.reply,
  stopReason: r.stopReason,
  terminalReason: r.terminalReason,
  toolCalls: r.toolCalls,
});

describe("memory extraction after a completed turn", () => {
  it("runs one governed call on its own route and writes the episode and facts with the turn's scope, source and sensitivity", async () => {
    const { h, stores } = withExtraction([scriptedText(ANSWER)]);
    const result = completed(
      await h.run({
        intent: { tier: "balanced", sensitivity: "confidential" },
        input: [{ type: "text", text: "I'm allergic to penicillin. Is amoxicillin ok?" }],
      }),
    );
    expect(h.routes.at(-1)).toEqual({
      tier: "fast",
      sensitivity: "confidential",
      task: "extraction",
    });
    const request = h.small.requests[0];
    expect(request?.system).toEqual([{ type: "text", text: EXTRACTION_INSTRUCTION }]);
    expect(request?.tools).toEqual([]);
    expect(request?.output?.name).toBe("memory_extraction");
    expect(textOf(request)).toBe(
      "Person: I'm allergic to penicillin. Is amoxicillin ok?\nAssistant: Noted: no penicillin.",
    );
    const { episodes, facts } = await listed(stores);
    expect(episodes).toEqual([
      {
        scope: SCOPE,
        episodeId: "ep:turn-1",
        source: { sessionId: "s1", turnId: "turn-1", at: h.clock.now() },
        sensitivity: "confidential",
        summary: "The person said they are allergic to penicillin and asked about amoxicillin.",
      },
    ]);
    expect(facts).toEqual([
      {
        scope: SCOPE,
        factId: "pf:turn-1:0",
        key: "allergy.penicillin",
        text: "Allergic to penicillin.",
        source: { sessionId: "s1", turnId: "turn-1", at: h.clock.now() },
        sensitivity: "confidential",
        confidence: 0.95,
      },
    ]);
    // Priced and on the trails: its receipt is the root's, its routing and cost records are written.
    expect(result.receipts.map((r) => r.kind)).toEqual(["main", "extraction"]);
    expect(h.trail("routing").filter((r) => r.kind === "extraction")).toHaveLength(2);
    expect(h.trail("cost")).toHaveLength(2);
    expect(extractionTrail(h)).toEqual(["stored:1:1"]);
    expect(JSON.stringify(h.audit.events)).not.toContain("penicillin");
    // The record of the extraction comes before the turn's completion.
    const actions = h.trail("lifecycle").map((r) => r.action);
    expect(actions.indexOf("memory.extraction")).toBeLessThan(actions.indexOf("turn.completed"));
  });

  it("labels product-side lines as the rotation summary does, marks an undelivered reply, and never reads harness blocks (recall, volatile)", async () => {
    const history: Msg[] = [
      { role: "user", blocks: [{ type: "text", text: "Hi" }], meta: { turn: "turn-0", at: 1 } },
      {
        role: "assistant",
        blocks: [{ type: "text", text: "Hello!" }],
        meta: { turn: "turn-0", at: 2 },
      },
      {
        role: "user",
        blocks: [
          {
            type: "text",
            text: "[Message from the team, shown to the person] Dr. Ana moved you to Friday.",
            origin: "human",
          },
        ],
        meta: { event: { id: "ev1", kind: "message" } },
      },
      {
        role: "user",
        blocks: [
          {
            type: "text",
            text: "The person did not receive the previous reply",
            origin: "harness",
          },
        ],
        meta: { event: { id: "ev2", kind: "undelivered" } },
      },
    ];
    const { h, stores } = withExtraction([scriptedText(ANSWER)], {
      volatile: () => "VOLATILE-CANARY",
    });
    completed(
      await h.run({
        history,
        revision: history.length,
        input: [{ type: "text", text: "Ok, Friday then." }],
      }),
    );
    const text = textOf(h.small.requests[0]);
    expect(text).toBe(
      "[Message from the team, shown to the person] Dr. Ana moved you to Friday.\n(The person did not receive the assistant's previous reply.)\nPerson: Ok, Friday then.\nAssistant: Noted: no penicillin.",
    );
    expect(text).not.toContain("VOLATILE-CANARY");
    expect((await listed(stores)).episodes[0]?.undelivered).toBe(true);
  });

  it("reads only this turn and the events recorded since the previous one: older history, timed or not, is left out", async () => {
    const history: Msg[] = [
      { role: "user", blocks: [{ type: "text", text: "OLD untimed message" }] },
      {
        role: "assistant",
        blocks: [{ type: "text", text: "OLD answer" }],
        meta: { turn: "turn-0", at: 2 },
      },
      {
        role: "user",
        blocks: [
          {
            type: "text",
            text: "[Automatic notice, shown to the person] Reminder sent.",
            origin: "system",
          },
        ],
        meta: { event: { id: "ev1", kind: "message" } },
      },
    ];
    const { h } = withExtraction([scriptedText(ANSWER)]);
    completed(
      await h.run({
        history,
        revision: history.length,
        input: [{ type: "text", text: "Thanks." }],
      }),
    );
    expect(textOf(h.small.requests[0])).toBe(
      "[Automatic notice, shown to the person] Reminder sent.\nPerson: Thanks.\nAssistant: Noted: no penicillin.",
    );
  });

  it("a transcript over EXTRACTION_TRANSCRIPT_MAX keeps its newest whole lines", async () => {
    const { h } = withExtraction([scriptedText(ANSWER)]);
    completed(
      await h.run({ input: [{ type: "text", text: `${"x".repeat(EXTRACTION_TRANSCRIPT_MAX)}` }] }),
    );
    expect(textOf(h.small.requests[0])).toBe("Assistant: Noted: no penicillin.");
  });

  it("at a rotation, reads the rotation's summary first", async () => {
    const old = 1;
    const history: Msg[] = [];
    for (let i = 0; i < 6; i++)
      history.push({
        role: i % 2 === 0 ? "user" : "assistant",
        blocks: [{ type: "text", text: `old message ${i} ${"x".repeat(200)}` }],
        meta: { turn: `t${i}`, at: old },
      });
    const { h } = withExtraction([scriptedText("The earlier talk."), scriptedText(ANSWER)], {
      longContext: { rotateAtTokens: 10, keepLastMessages: 2, summaryTier: "fast" },
    });
    completed(await h.run({ history, revision: history.length }));
    const text = textOf(h.small.requests[1]);
    expect(text.startsWith("Earlier summary: ")).toBe(true);
    expect(text).toContain("The earlier talk.");
  });

  it("an answer off the schema, not JSON, over a bound or with a repeated key writes nothing, and the turn's outcome is unchanged", async () => {
    const plain = harness({ script: [scriptedText("Noted: no penicillin.")] });
    const expected = outcomeOf(completed(await plain.run()));
    const bad = [
      "not json at all",
      JSON.stringify({
        episode: "x",
        facts: [{ key: "Allergy Penicillin", text: "x", confidence: 1 }],
      }),
      JSON.stringify({ episode: "x", facts: [{ key: "a", text: "x", confidence: 1.5 }] }),
      JSON.stringify({ episode: "x", facts: [], extra: true }),
      JSON.stringify({ episode: "é".repeat(2049), facts: [] }),
      JSON.stringify({
        episode: "x",
        facts: [
          { key: "a", text: "one", confidence: 1 },
          { key: "a", text: "two", confidence: 1 },
        ],
      }),
      JSON.stringify({ episode: "   ", facts: [] }),
    ];
    for (const answer of bad) {
      const { h, stores } = withExtraction([scriptedText(answer)]);
      const result = completed(await h.run());
      expect(outcomeOf(result)).toEqual(expected);
      expect(await listed(stores)).toEqual({ episodes: [], facts: [] });
      expect(extractionTrail(h)).toEqual(["invalid:0:0"]);
    }
  });

  it("at most maxFacts facts: one over is invalid and writes nothing", async () => {
    const facts = (n: number) =>
      JSON.stringify({
        episode: null,
        facts: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, text: "t", confidence: 0.5 })),
      });
    const stores = inMemoryMemoryStores();
    const h2 = harness({
      script: [scriptedText("ok")],
      smallScript: [scriptedText(facts(2))],
      extraction: { tier: "fast", stores, maxFacts: 2 },
    });
    completed(await h2.run());
    expect(extractionTrail(h2)).toEqual(["stored:0:2"]);
    const over = inMemoryMemoryStores();
    const h3 = harness({
      script: [scriptedText("ok")],
      smallScript: [scriptedText(facts(3))],
      extraction: { tier: "fast", stores: over, maxFacts: 2 },
    });
    completed(await h3.run());
    expect(extractionTrail(h3)).toEqual(["invalid:0:0"]);
    expect((await over.profiles.list(SCOPE)).items).toEqual([]);
  });
});

describe("extraction is priced and capped; its failure never changes the turn", () => {
  it("a per-turn cap at the extraction's worst case lets it run; one micro-dollar under refuses it at zero cost, the turn unchanged", async () => {
    // The extraction request, measured on a run without a cap (the transcript is the same every run).
    const probe = withExtraction([scriptedText(ANSWER)], { choice: { maxOutputTokens: 16 } });
    const probeResult = completed(await probe.h.run());
    const request = probe.h.small.requests[0];
    if (!request) throw new Error("no extraction request");
    const worst = worstCaseMicros(PRICES, SMALL_CHOICE, request) as number;
    const main = probeResult.receipts[0]?.usdMicros as number;
    const expected = outcomeOf(probeResult);
    const capAt = (micros: number) => ({ perTurnUsd: micros / 1_000_000 });

    const fits = withExtraction([scriptedText(ANSWER)], {
      choice: { maxOutputTokens: 16 },
      caps: capAt(main + worst),
    });
    const r1 = completed(await fits.h.run());
    expect(outcomeOf(r1)).toEqual(expected);
    expect(r1.receipts.map((r) => r.kind)).toEqual(["main", "extraction"]);
    expect(extractionTrail(fits.h)).toEqual(["stored:1:1"]);

    const over = withExtraction([scriptedText(ANSWER)], {
      choice: { maxOutputTokens: 16 },
      caps: capAt(main + worst - 1),
    });
    const r2 = completed(await over.h.run());
    expect(outcomeOf(r2)).toEqual(expected);
    expect(r2.receipts.map((r) => r.kind)).toEqual(["main"]);
    expect(r2.costMicros).toBe(main);
    expect(over.h.small.calls).toBe(0);
    expect(await listed(over.stores)).toEqual({ episodes: [], facts: [] });
    expect(extractionTrail(over.h)).toEqual(["refused:0:0"]);
    expect(over.h.trail("cost").filter((c) => c.refused)).toHaveLength(1);
  });

  it("an unpriced extraction model is refused at zero cost", async () => {
    const prices: PriceTable = {
      ...PRICES,
      models: { "fake-main": PRICES.models["fake-main"] as PriceTable["models"][string] },
    };
    const { h, stores } = withExtraction([scriptedText(ANSWER)], { prices });
    const result = completed(await h.run());
    expect(result.receipts.map((r) => r.kind)).toEqual(["main"]);
    expect(h.small.calls).toBe(0);
    expect(extractionTrail(h)).toEqual(["refused:0:0"]);
    expect(await listed(stores)).toEqual({ episodes: [], facts: [] });
  });

  it("no call left: nothing is asked", async () => {
    const { h } = withExtraction([scriptedText(ANSWER)], { limits: { maxCalls: 1 } });
    completed(await h.run());
    expect(h.small.calls).toBe(0);
    expect(extractionTrail(h)).toEqual(["no_call:0:0"]);
  });

  it("a torn extraction stream or a failing store: the turn completes as it would have, the failure on the trail", async () => {
    const plain = harness({ script: [scriptedText("Noted: no penicillin.")] });
    const expected = outcomeOf(completed(await plain.run()));
    const torn = withExtraction([scriptedTorn(scriptedText(ANSWER))]);
    expect(outcomeOf(completed(await torn.h.run()))).toEqual(expected);
    expect(extractionTrail(torn.h)).toEqual(["failed:0:0"]);

    const memory = inMemoryMemoryStores();
    const episodes: EpisodeStore = {
      ...memory.episodes,
      search: memory.episodes.search.bind(memory.episodes),
      list: memory.episodes.list.bind(memory.episodes),
      put: memory.episodes.put.bind(memory.episodes),
    };
    const profiles: ProfileStore = {
      put: async () => {
        throw new Error("disk full");
      },
      search: memory.profiles.search.bind(memory.profiles),
      list: memory.profiles.list.bind(memory.profiles),
      remove: memory.profiles.remove.bind(memory.profiles),
    };
    const failing = harness({
      script: [scriptedText("Noted: no penicillin.")],
      smallScript: [scriptedText(ANSWER)],
      extraction: { tier: "fast", stores: { episodes, profiles } },
    });
    expect(outcomeOf(completed(await failing.run()))).toEqual(expected);
    expect(extractionTrail(failing)).toEqual(["failed:1:0"]);
  });

  it("cancelled while the extraction call hangs: the call is cut, nothing is written, the turn completes as it would have", async () => {
    const stores = inMemoryMemoryStores();
    const h = harness({
      script: [scriptedText("Noted: no penicillin.")],
      smallScript: [scriptedHang()],
      extraction: { tier: "fast", stores },
    });
    const control = new AbortController();
    const running = h.run({ signal: control.signal });
    await until(() => h.small.calls === 1, "the extraction was dispatched");
    control.abort();
    const result = completed(await running);
    expect(result.reply).toEqual([{ type: "text", text: "Noted: no penicillin." }]);
    expect(extractionTrail(h)).toEqual(["failed:0:0"]);
    expect(await listed(stores)).toEqual({ episodes: [], facts: [] });
  });

  it("never for a delegate: a turn whose tool delegates extracts once, for the main thread", async () => {
    const probe = tool(
      "probe",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const stores = inMemoryMemoryStores();
    const h = harness({
      tools: [probe, echoTool],
      script: [scriptedToolCall({ id: "m1", name: "probe" }), scriptedText("done")],
      smallScript: [scriptedText("dug"), scriptedText(ANSWER)],
      extraction: { tier: "fast", stores },
    });
    completed(await h.run());
    expect(h.routes.filter((r) => r.task === "extraction")).toHaveLength(1);
    expect(extractionTrail(h)).toEqual(["stored:1:1"]);
  });

  it("is validated at construction", () => {
    const h = harness();
    const base = {
      clients: [h.model],
      policy: { resolve: () => SMALL_CHOICE },
      limits: { maxCalls: 1 },
      calls: h.calls,
      audit: h.audit,
      clock: h.clock,
      ids: { next: () => "x" },
    };
    const stores = inMemoryMemoryStores();
    for (const extraction of [
      {},
      { tier: "huge", stores },
      { tier: "fast" },
      { tier: "fast", stores, maxFacts: 21 },
      { tier: "fast", stores, instruction: "" },
    ]) {
      expect(() => createEngine({ ...base, extraction } as never)).toThrow(EngineConfigError);
    }
  });
});
