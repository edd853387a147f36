import { getEventListeners } from "node:events";
import {
  type BudgetCapsInput,
  type Episode,
  normalizeBudgetCaps,
  type PriceTable,
  type ProfileFact,
  type RecallQuery,
  type Scope,
  type Sensitivity,
  SENSITIVITIES,
  sensitivityRank,
  trailKey,
  utcDay,
  worstCaseMicros,
} from "@alma-harness/core";
import {
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  ManualClock,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import {
  embeddingRequest,
  type SemanticRanking,
  semanticRecall,
  storeRecall,
} from "@alma-harness/memory";
import { ConceptEmbedding, inMemoryMemoryStores } from "@alma-harness/memory/testing";
import { describe, expect, it } from "vitest";

const KEY = trailKey("semantic-recall-test-trail-key-of-32-bytes!");
const MODEL = "embed-small";
/** $100 per million input tokens: 100 micro-dollars a token, so a settlement is visible in whole micros. */
const PRICES: PriceTable = {
  version: "p-embed",
  models: { [MODEL]: { rates: { input: 100, output: 0 } } },
};
const PATIENT: Scope = { org: "clinic", uid: "patient-1" };
const OTHER: Scope = { org: "clinic", uid: "patient-2" };

function fact(
  scope: Scope,
  factId: string,
  key: string,
  text: string,
  at: number,
  sensitivity: Sensitivity = "internal",
): ProfileFact {
  return {
    scope,
    factId,
    key,
    text,
    source: { sessionId: "s-old", turnId: `t-${factId}`, at },
    sensitivity,
    confidence: 0.9,
  };
}

function episode(
  scope: Scope,
  episodeId: string,
  summary: string,
  at: number,
  sensitivity: Sensitivity = "internal",
): Episode {
  return {
    scope,
    episodeId,
    summary,
    source: { sessionId: "s-old", turnId: `t-${episodeId}`, at },
    sensitivity,
  };
}

async function clinic() {
  const memory = inMemoryMemoryStores();
  for (const scope of [PATIENT, OTHER]) {
    const p = scope.uid;
    await memory.profiles.put(
      fact(
        scope,
        `${p}-penicillin`,
        "allergy.penicillin",
        `Gets a severe reaction from penicillin (${p})`,
        1_000,
      ),
    );
    await memory.profiles.put(
      fact(
        scope,
        `${p}-coffee`,
        "pref.coffee",
        `Likes to take coffee with breakfast (${p})`,
        2_000,
      ),
    );
    await memory.profiles.put(
      fact(scope, `${p}-daughter`, "family.daughter", `Her daughter is named Ana (${p})`, 3_000),
    );
    await memory.profiles.put(
      fact(
        scope,
        `${p}-secret`,
        "condition.hidden",
        `A restricted diagnosis about a drug (${p})`,
        4_000,
        "restricted",
      ),
    );
    await memory.episodes.put(
      episode(scope, `${p}-cats`, `Said they are allergic to cats (${p})`, 1_000),
    );
    await memory.episodes.put(
      episode(scope, `${p}-trip`, `Talked about the weekend trip (${p})`, 2_000),
    );
    await memory.episodes.put(
      episode(
        scope,
        `${p}-restricted`,
        `A restricted talk about a rash (${p})`,
        3_000,
        "restricted",
      ),
    );
  }
  return memory;
}

function governed(opts: { caps?: BudgetCapsInput; prices?: PriceTable } = {}) {
  const settlements = new InMemoryCostSettlementStore();
  const journal = new InMemoryExecutionStore({ spend: settlements.spend });
  const audit = new RecordingAuditLog();
  const clock = new ManualClock();
  const calls = new GovernedCalls({
    journal,
    settlements,
    spend: settlements.spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "policy-1",
    audit,
    clock,
  });
  return { calls, journal, settlements, audit, clock };
}

function query(text: string, overrides: Partial<RecallQuery> = {}): RecallQuery {
  return {
    scope: PATIENT,
    sessionId: "s-new",
    text,
    ceiling: "internal",
    limits: { episodes: 1, facts: 1 },
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function build(opts: { caps?: BudgetCapsInput; prices?: PriceTable } = {}) {
  const memory = await clinic();
  const g = governed(opts);
  const embedding = new ConceptEmbedding();
  const rankings: SemanticRanking[] = [];
  const source = semanticRecall({
    stores: memory,
    embedding,
    calls: g.calls,
    model: MODEL,
    trailKey: KEY,
    onRanking: (r) => rankings.push(r),
  });
  return { memory, ...g, embedding, rankings, source, lexical: storeRecall(memory) };
}

const ids = (r: { episodes: readonly Episode[]; facts: readonly ProfileFact[] }) => ({
  episodes: r.episodes.map((e) => e.episodeId),
  facts: r.facts.map((f) => f.factId),
});

describe("semanticRecall", () => {
  it("ranks a paraphrase above the lexical order: 'medicine I cannot take' finds the penicillin fact, 'allergies' the allergic episode", async () => {
    const t = await build();
    const q = query("which medicine can I not take, any allergies?");
    const lexical = ids(await t.lexical.recall(q));
    // Lexically, "take" matches the coffee fact, and no episode has the word "allergies".
    expect(lexical).toEqual({ episodes: [], facts: ["patient-1-coffee"] });
    const semantic = ids(await t.source.recall(q));
    expect(semantic).toEqual({ episodes: ["patient-1-cats"], facts: ["patient-1-penicillin"] });
    expect(t.rankings).toEqual(["semantic"]);
    // The query first, then the candidates: nothing restricted, nothing of the other patient went to the provider.
    expect(t.embedding.requests).toHaveLength(1);
    const sent = (t.embedding.requests[0] as string[]).join("\n");
    expect(sent).not.toContain("restricted");
    expect(sent).not.toContain("patient-2");
  });

  it("prices the embedding at the model's input rate and settles it once: receipt, spend, journal and cost trail", async () => {
    const t = await build();
    await t.source.recall(query("any allergies?"));
    const tokens =
      (t.embedding.requests[0] as string[]).join(" ").match(/[\p{L}\p{N}]+/gu)?.length ?? 0;
    expect(tokens).toBeGreaterThan(0);
    const spent = await t.settlements.spend.peek(PATIENT, "s-new", utcDay(t.clock.now()));
    expect(spent.sessionMicros).toBe(tokens * 100);
    const costs = t.audit.trail("cost");
    expect(costs).toHaveLength(1);
    expect(costs[0]?.usdMicros).toBe(tokens * 100);
    const records = await t.journal.list(PATIENT, { resolved: true });
    expect(records.items).toHaveLength(1);
    expect(records.items[0]?.state).toBe("completed");
    // The egress is on the access trail, before the dispatch (a call outside a turn).
    expect(t.audit.trail("access").length).toBe(1);
  });

  it("an unpriced embedding model makes no call and answers the lexical order, and says so", async () => {
    const t = await build({
      prices: { version: "p-none", models: { other: { rates: { input: 1, output: 1 } } } },
    });
    const q = query("which medicine can I not take, any allergies?");
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(q)));
    expect(t.embedding.requests).toHaveLength(0);
    expect(t.rankings).toEqual(["lexical_unpriced"]);
    // Said on the cost trail too: one refused record at zero.
    const costs = t.audit.trail("cost");
    expect(costs).toHaveLength(1);
    expect(costs[0]?.usdMicros).toBe(0);
    expect(costs[0]?.refused?.reason).toBe("unpriced");
    expect((await t.journal.list(PATIENT, { resolved: true })).items).toHaveLength(0);
    expect(
      (await t.settlements.spend.peek(PATIENT, "s-new", utcDay(t.clock.now()))).sessionMicros,
    ).toBe(0);
  });

  it("an embedding that throws answers the lexical order", async () => {
    const t = await build();
    t.embedding.behaviour = "throw";
    const q = query("which medicine can I not take, any allergies?");
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(q)));
    expect(t.embedding.requests).toHaveLength(1);
    expect(t.rankings).toEqual(["lexical_failed"]);
    expect(t.audit.trail("cost")).toHaveLength(0);
  });

  it("an embedding that hangs past the recall's signal answers the lexical order; its listener and the recall's are removed", async () => {
    const t = await build();
    t.embedding.behaviour = "hang";
    const ac = new AbortController();
    const q = query("which medicine can I not take, any allergies?", { signal: ac.signal });
    const started = t.embedding.started();
    const pending = t.source.recall(q);
    await started;
    ac.abort(new Error("recall deadline"));
    expect(ids(await pending)).toEqual(ids(await t.lexical.recall(query(q.text))));
    expect(t.rankings).toEqual(["lexical_failed"]);
    expect(t.embedding.aborted).toBe(1);
    expect(t.embedding.listening).toBe(0);
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
  });

  it("an embedding that hangs past its round deadline answers the lexical order with no timer left", async () => {
    const memory = await clinic();
    const g = governed();
    const embedding = new ConceptEmbedding();
    embedding.behaviour = "hang";
    const rankings: SemanticRanking[] = [];
    const source = semanticRecall({
      stores: memory,
      embedding,
      calls: g.calls,
      model: MODEL,
      trailKey: KEY,
      roundTimeoutMs: 5_000,
      onRanking: (r) => rankings.push(r),
    });
    const q = query("which medicine can I not take, any allergies?");
    const started = embedding.started();
    const pending = source.recall(q);
    await started;
    // The round's timer is the governed calls' clock: one sleeper, woken past the deadline.
    expect(g.clock.pending).toBe(1);
    g.clock.advance(5_000);
    expect(ids(await pending)).toEqual(ids(await storeRecall(memory).recall(q)));
    expect(rankings).toEqual(["lexical_failed"]);
    expect(embedding.listening).toBe(0);
    expect(embedding.aborted).toBe(1);
    expect(g.clock.pending).toBe(0);
  });

  it("a per-turn cap one micro-dollar under the worst case refuses at zero cost (lexical order); at the worst case it runs", async () => {
    const probe = await build();
    const q = query("which medicine can I not take, any allergies?");
    await probe.source.recall(q);
    const texts = probe.embedding.requests[0] as string[];
    const request = embeddingRequest(MODEL, texts);
    const worst = worstCaseMicros(
      PRICES,
      { clientId: "concept-embed", model: MODEL, maxOutputTokens: 1, cache: false },
      request,
    ) as number;
    expect(worst).toBeGreaterThan(0);

    const under = await build({ caps: { perTurnUsd: (worst - 1) / 1e6 } });
    expect(ids(await under.source.recall(q))).toEqual(ids(await under.lexical.recall(q)));
    expect(under.embedding.requests).toHaveLength(0);
    expect(under.rankings).toEqual(["lexical_refused"]);
    expect(under.audit.trail("cost").map((c) => [c.usdMicros, c.refused?.reason])).toEqual([
      [0, "cap"],
    ]);
    expect((await under.journal.list(PATIENT, { resolved: true })).items).toHaveLength(0);
    expect(
      (await under.settlements.spend.peek(PATIENT, "s-new", utcDay(under.clock.now())))
        .sessionMicros,
    ).toBe(0);

    const at = await build({ caps: { perTurnUsd: worst / 1e6 } });
    expect(ids(await at.source.recall(q))).toEqual({
      episodes: ["patient-1-cats"],
      facts: ["patient-1-penicillin"],
    });
    expect(at.rankings).toEqual(["semantic"]);
  });

  it("a session block cap counts the session's settled embeddings: the second recall that would pass it is refused, lexical order", async () => {
    const probe = await build();
    const q = query("which medicine can I not take, any allergies?");
    await probe.source.recall(q);
    const worst = worstCaseMicros(
      PRICES,
      { clientId: "concept-embed", model: MODEL, maxOutputTokens: 1, cache: false },
      embeddingRequest(MODEL, probe.embedding.requests[0] as string[]),
    ) as number;
    const t = await build({ caps: { perSessionUsd: { usd: worst / 1e6, onExceeded: "block" } } });
    expect(ids(await t.source.recall(q))).toEqual({
      episodes: ["patient-1-cats"],
      facts: ["patient-1-penicillin"],
    });
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(q)));
    expect(t.rankings).toEqual(["semantic", "lexical_refused"]);
    expect(t.embedding.requests).toHaveLength(1);
    // Another session of the same tenant is not counted against this one.
    expect(ids(await t.source.recall({ ...q, sessionId: "s-other" }))).toEqual({
      episodes: ["patient-1-cats"],
      facts: ["patient-1-penicillin"],
    });
  });

  it("never returns another scope's record or one above the ceiling, across 1,024 attempts", async () => {
    const t = await build();
    const texts = [
      "any allergies?",
      "medicine I cannot take",
      "restricted drug rash",
      "patient-2 coffee daughter",
      "weekend trip",
      "penicillin patient-1 patient-2",
    ];
    let checked = 0;
    for (let i = 0; i < 1_024; i++) {
      const scope = i % 2 === 0 ? PATIENT : OTHER;
      const ceiling = SENSITIVITIES[i % SENSITIVITIES.length] as Sensitivity;
      const result = await t.source.recall(
        query(texts[i % texts.length] as string, {
          scope,
          ceiling,
          limits: { episodes: 3, facts: 4 },
        }),
      );
      for (const r of [...result.episodes, ...result.facts]) {
        expect(r.scope).toEqual(scope);
        expect(sensitivityRank(r.sensitivity)).toBeLessThanOrEqual(sensitivityRank(ceiling));
        checked += 1;
      }
      expect(result.episodes.length).toBeLessThanOrEqual(3);
      expect(result.facts.length).toBeLessThanOrEqual(4);
    }
    expect(checked).toBeGreaterThan(1_024);
    // A ceiling with nothing under it has no candidate (no call); every other attempt was re-ranked.
    expect(t.rankings.every((r) => r === "semantic" || r === "lexical_only")).toBe(true);
    expect(t.rankings.filter((r) => r === "semantic").length).toBeGreaterThan(700);
  });

  it("asks for nothing it was not asked: zero bounds, and a query with no text makes no call", async () => {
    const t = await build();
    expect(
      ids(await t.source.recall(query("allergies", { limits: { episodes: 0, facts: 0 } }))),
    ).toEqual({ episodes: [], facts: [] });
    expect(ids(await t.source.recall(query("   ", { limits: { episodes: 2, facts: 2 } })))).toEqual(
      ids(await t.lexical.recall(query("   ", { limits: { episodes: 2, facts: 2 } }))),
    );
    expect(t.embedding.requests).toHaveLength(0);
    expect(t.rankings).toEqual(["lexical_only", "lexical_only"]);
  });

  it("a settlement that landed and then reported a failure: lexical order, spend moved once, nothing re-sent", async () => {
    const t = await build();
    const settle = t.settlements.settle.bind(t.settlements);
    t.settlements.settle = async (input) => {
      await settle(input);
      throw new Error("connection reset after commit");
    };
    const q = query("which medicine can I not take, any allergies?");
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(q)));
    expect(t.rankings).toEqual(["lexical_failed"]);
    expect(t.embedding.requests).toHaveLength(1);
    const tokens =
      (t.embedding.requests[0] as string[]).join(" ").match(/[\p{L}\p{N}]+/gu)?.length ?? 0;
    expect(
      (await t.settlements.spend.peek(PATIENT, "s-new", utcDay(t.clock.now()))).sessionMicros,
    ).toBe(tokens * 100);
  });

  it("a recall already cancelled sends nothing: lexical order, the claim ended not dispatched", async () => {
    const t = await build();
    const ac = new AbortController();
    ac.abort(new Error("cancelled"));
    const q = query("which medicine can I not take, any allergies?", { signal: ac.signal });
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(query(q.text))));
    expect(t.embedding.requests).toHaveLength(0);
    expect(t.rankings).toEqual(["lexical_failed"]);
    expect(t.audit.trail("cost")).toHaveLength(0);
  });

  it("8 concurrent recalls are 8 calls, each settled once under its own operation", async () => {
    const t = await build();
    const q = query("which medicine can I not take, any allergies?");
    const results = await Promise.all(Array.from({ length: 8 }, () => t.source.recall(q)));
    for (const r of results)
      expect(ids(r)).toEqual({ episodes: ["patient-1-cats"], facts: ["patient-1-penicillin"] });
    const tokens =
      (t.embedding.requests[0] as string[]).join(" ").match(/[\p{L}\p{N}]+/gu)?.length ?? 0;
    expect(
      (await t.settlements.spend.peek(PATIENT, "s-new", utcDay(t.clock.now()))).sessionMicros,
    ).toBe(8 * tokens * 100);
    const costs = t.audit.trail("cost");
    expect(new Set(costs.map((c) => c.operationId)).size).toBe(8);
    expect(costs).toHaveLength(8);
  });

  it("an embedding answering off its shape (a vector short) is not used", async () => {
    const t = await build();
    t.embedding.embed = async (request) => ({
      vectors: request.texts.slice(1).map(() => [1, 0]),
      usage: { inputTokens: 3 },
    });
    const q = query("which medicine can I not take, any allergies?");
    expect(ids(await t.source.recall(q))).toEqual(ids(await t.lexical.recall(q)));
    expect(t.rankings).toEqual(["lexical_failed"]);
    expect(t.audit.trail("cost")).toHaveLength(0);
  });

  it("refuses bad options with a typed error", () => {
    const memory = inMemoryMemoryStores();
    const g = governed();
    const base = {
      stores: memory,
      embedding: new ConceptEmbedding(),
      calls: g.calls,
      model: MODEL,
      trailKey: KEY,
    };
    expect(() => semanticRecall({ ...base, candidates: 51 })).toThrow(/candidates/);
    expect(() => semanticRecall({ ...base, candidates: 0 })).toThrow(/candidates/);
    expect(() => semanticRecall({ ...base, model: "" })).toThrow(/model/);
    expect(() => semanticRecall({ ...base, name: "Bad Name" })).toThrow(/name/);
    expect(() => semanticRecall({ ...base, embedding: {} as never })).toThrow(/EmbeddingClient/);
    expect(semanticRecall({ ...base, candidates: 50 }).name).toBe("memory.semantic");
  });
});
