import {
  type Episode,
  type EpisodeStore,
  type MemoryErasure,
  MemoryConflictError,
  type ProfileFact,
  type ProfileStore,
  type Scope,
  SENSITIVITIES,
  sensitivityRank,
  ValidationError,
} from "@alma-harness/core";
import { StoreFaults } from "./faults.js";
import {
  type Closable,
  contractSuite,
  deepFrozen,
  type Factory,
  type FixtureTest,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
} from "./harness.js";
import { memoryInputTests } from "./memory-input.js";

/** One memory store set: episodes, profile facts and the memory side of erasure, over one backend. */
export interface MemoryFixture extends Closable {
  readonly episodes: EpisodeStore;
  readonly profiles: ProfileStore;
  readonly erasure: MemoryErasure;
}

/** An episode of `SCOPE_A`, session `s1`, internal. */
export function episodeOf(episodeId: string, over: Partial<Episode> = {}): Episode {
  return {
    scope: SCOPE_A,
    episodeId,
    source: { sessionId: "s1", turnId: "t1", at: T0 },
    sensitivity: "internal",
    summary: "The patient asked about opening hours.",
    ...over,
  };
}

/** A profile fact of `SCOPE_A`, session `s1`, internal. */
export function factOf(factId: string, over: Partial<ProfileFact> = {}): ProfileFact {
  return {
    scope: SCOPE_A,
    factId,
    key: "allergy.penicillin",
    text: "Allergic to penicillin (hives).",
    source: { sessionId: "s1", turnId: "t1", at: T0 },
    sensitivity: "confidential",
    confidence: 0.9,
    ...over,
  };
}

const at = (n: number) => ({ sessionId: "s1", turnId: `t${n}`, at: T0 + n });

/**
 * The memory contract (`EpisodeStore`, `ProfileStore`, `MemoryErasure`): a put stores once (equal
 * replay, typed conflict); a search returns the asked scope only, at or below the ceiling, current
 * facts only; list pages every record newest first; erasure leaves nothing recallable; input is
 * validated once in core, before any I/O; full-text syntax in a query is never syntax.
 */
export function memoryContract(name: string, factory: Factory<MemoryFixture>, t: TestApi): void {
  contractSuite(t, `${name}: memory contract`, factory, [
    putTests,
    searchTests,
    isolationTests,
    listTests,
    erasureTests,
    concurrencyTests,
    memoryInputTests,
  ]);
}

function putTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("put stores once; an equal put is replayed; a different record under the id conflicts (typed, code memory_conflict)", async (fx) => {
    t.expect(await fx.episodes.put(episodeOf("ep-1"))).toBe("stored");
    t.expect(await fx.episodes.put(episodeOf("ep-1"))).toBe("replayed");
    const e = await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-1", { summary: "Something else." })),
      MemoryConflictError,
      "memory_conflict",
    );
    t.expect(e.message.includes("Something else")).toBe(false);
    await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-1", { undelivered: true })),
      MemoryConflictError,
    );
    t.expect(await fx.profiles.put(factOf("f-1"))).toBe("stored");
    t.expect(await fx.profiles.put({ ...factOf("f-1"), confidence: 0.9 })).toBe("replayed");
    await rejects(
      t,
      () => fx.profiles.put(factOf("f-1", { confidence: 0.8 })),
      MemoryConflictError,
      "memory_conflict",
    );
    await rejects(
      t,
      () =>
        fx.profiles.put(factOf("f-1", { source: { ...factOf("f-1").source, sessionId: "s2" } })),
      MemoryConflictError,
    );
    // The same id in another scope is another record.
    t.expect(
      await fx.episodes.put(episodeOf("ep-1", { scope: SCOPE_B, summary: "Other tenant." })),
    ).toBe("stored");
    const eps = await fx.episodes.list(SCOPE_A);
    t.expect(eps.items).toEqual([episodeOf("ep-1")]);
    t.expect(deepFrozen(eps.items)).toBe(true);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toEqual([factOf("f-1")]);
  });

  test("executed, then reported a failure: the retry is a replay, never a second record; failed before: the retry stores", async (fx) => {
    const after = new StoreFaults({ seed: 7, rate: 1, afterShare: 1 });
    await rejects(
      t,
      () => after.wrap("episodes", fx.episodes).put(episodeOf("ep-1")),
      Error,
      "store_unavailable",
    );
    await rejects(
      t,
      () => after.wrap("profiles", fx.profiles).put(factOf("f-1")),
      Error,
      "store_unavailable",
    );
    await rejects(
      t,
      () => after.wrap("erasure", fx.erasure).eraseMemory({ scope: SCOPE_A2 }),
      Error,
      "store_unavailable",
    );
    t.expect(after.counts().after).toBe(3);
    t.expect(await fx.episodes.put(episodeOf("ep-1"))).toBe("replayed");
    t.expect(await fx.profiles.put(factOf("f-1"))).toBe("replayed");
    const before = new StoreFaults({ seed: 7, rate: 1, afterShare: 0 });
    await rejects(
      t,
      () => before.wrap("episodes", fx.episodes).put(episodeOf("ep-2")),
      Error,
      "store_unavailable",
    );
    t.expect(await fx.episodes.put(episodeOf("ep-2"))).toBe("stored");
    // An erasure that ran and then reported a failure is run again: idempotent, nothing more to erase.
    await rejects(
      t,
      () => after.wrap("erasure", fx.erasure).eraseMemory({ scope: SCOPE_A, sessionId: "s1" }),
      Error,
      "store_unavailable",
    );
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A, sessionId: "s1" })).toEqual({
      episodes: 0,
      facts: 0,
    });
    t.expect((await fx.episodes.list(SCOPE_A)).items).toEqual([]);
  });
}

function searchTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("search ranks by the store's full-text search: more matched terms first, a 4-character prefix matches, a shorter one does not, no match is no hit", async (fx) => {
    await fx.episodes.put(
      episodeOf("ep-a", {
        summary: "Told us about a penicillin allergy; prescribed something else.",
        source: at(1),
      }),
    );
    await fx.episodes.put(
      episodeOf("ep-b", { summary: "Asked to refill the penicillin prescription.", source: at(2) }),
    );
    await fx.episodes.put(
      episodeOf("ep-c", { summary: "Booked a flu shot for Tuesday.", source: at(3) }),
    );
    const hits = await fx.episodes.search(SCOPE_A, {
      text: "penicillin allergy",
      ceiling: "restricted",
      limit: 10,
    });
    t.expect(hits.map((h) => h.record.episodeId)).toEqual(["ep-a", "ep-b"]);
    t.expect((hits[0]?.score ?? 0) > (hits[1]?.score ?? 0)).toBe(true);
    t.expect(deepFrozen(hits)).toBe(true);
    t.expect(
      (await fx.episodes.search(SCOPE_A, { text: "penic", ceiling: "restricted", limit: 10 }))
        .map((h) => h.record.episodeId)
        .sort(),
    ).toEqual(["ep-a", "ep-b"]);
    t.expect(
      await fx.episodes.search(SCOPE_A, { text: "pen", ceiling: "restricted", limit: 10 }),
    ).toEqual([]);
    t.expect(
      await fx.episodes.search(SCOPE_A, { text: "dermatology", ceiling: "restricted", limit: 10 }),
    ).toEqual([]);
    t.expect(
      (
        await fx.episodes.search(SCOPE_A, { text: "PENICILLIN", ceiling: "restricted", limit: 1 })
      ).map((h) => h.record.episodeId),
    ).toHaveLength(1);
    // No word in the query: the newest first.
    t.expect(
      (await fx.episodes.search(SCOPE_A, { text: "?!", ceiling: "restricted", limit: 2 })).map(
        (h) => h.record.episodeId,
      ),
    ).toEqual(["ep-c", "ep-b"]);
  });

  test("never above the ceiling: every sensitivity against every ceiling, at the ceiling included", async (fx) => {
    for (const [i, s] of SENSITIVITIES.entries()) {
      await fx.episodes.put(
        episodeOf(`ep-${s}`, { sensitivity: s, summary: `Allergy note ${s}.`, source: at(i) }),
      );
      await fx.profiles.put(
        factOf(`f-${s}`, {
          key: `allergy.${s}`,
          sensitivity: s,
          text: `Allergy ${s}.`,
          source: at(i),
        }),
      );
    }
    for (const ceiling of SENSITIVITIES) {
      const allowed = SENSITIVITIES.filter(
        (s) => sensitivityRank(s) <= sensitivityRank(ceiling),
      ).sort();
      for (const text of ["allergy", "…"]) {
        const eps = await fx.episodes.search(SCOPE_A, { text, ceiling, limit: 50 });
        t.expect(
          eps.map((h) => h.record.sensitivity).sort(),
          `episodes at ceiling ${ceiling}`,
        ).toEqual(allowed);
        const facts = await fx.profiles.search(SCOPE_A, { text, ceiling, limit: 50 });
        t.expect(
          facts.map((h) => h.record.sensitivity).sort(),
          `facts at ceiling ${ceiling}`,
        ).toEqual(allowed);
      }
    }
  });

  test("supersession by key: search sees the newest fact of a key only (even when the newest is above the ceiling); list keeps all; removing the newest uncovers the older", async (fx) => {
    await fx.profiles.put(
      factOf("f-old", { text: "Allergic to penicillin.", source: at(1), sensitivity: "internal" }),
    );
    await fx.profiles.put(
      factOf("f-new", {
        text: "No penicillin allergy after testing.",
        source: at(5),
        sensitivity: "confidential",
      }),
    );
    await fx.profiles.put(
      factOf("f-other", {
        key: "diet.vegetarian",
        text: "Vegetarian, no penicillin issue noted.",
        source: at(3),
        sensitivity: "internal",
      }),
    );
    const current = await fx.profiles.search(SCOPE_A, {
      text: "penicillin",
      ceiling: "restricted",
      limit: 10,
    });
    t.expect(current.map((h) => h.record.factId).sort()).toEqual(["f-new", "f-other"]);
    const below = await fx.profiles.search(SCOPE_A, {
      text: "penicillin",
      ceiling: "internal",
      limit: 10,
    });
    t.expect(
      below.map((h) => h.record.factId),
      "a superseded fact is not recalled in its successor's place",
    ).toEqual(["f-other"]);
    t.expect((await fx.profiles.list(SCOPE_A)).items.map((f) => f.factId)).toEqual([
      "f-new",
      "f-other",
      "f-old",
    ]);
    // Same time: the greater fact id is the newer.
    await fx.profiles.put(
      factOf("f-tie-a", { key: "phone.pref", text: "Call mornings.", source: at(9) }),
    );
    await fx.profiles.put(
      factOf("f-tie-b", { key: "phone.pref", text: "Call evenings.", source: at(9) }),
    );
    t.expect(
      (await fx.profiles.search(SCOPE_A, { text: "call", ceiling: "restricted", limit: 10 })).map(
        (h) => h.record.factId,
      ),
    ).toEqual(["f-tie-b"]);
    t.expect(await fx.profiles.remove(SCOPE_A, "f-new")).toBe(true);
    t.expect(await fx.profiles.remove(SCOPE_A, "f-new")).toBe(false);
    t.expect(
      (await fx.profiles.search(SCOPE_A, { text: "penicillin", ceiling: "internal", limit: 10 }))
        .map((h) => h.record.factId)
        .sort(),
    ).toEqual(["f-old", "f-other"]);
  });

  test("remove is one scope's: the same fact id elsewhere stays", async (fx) => {
    await fx.profiles.put(factOf("f-1"));
    await fx.profiles.put(factOf("f-1", { scope: SCOPE_A2 }));
    t.expect(await fx.profiles.remove(SCOPE_B, "f-1")).toBe(false);
    t.expect(await fx.profiles.remove(SCOPE_A, "f-1")).toBe(true);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toEqual([]);
    t.expect((await fx.profiles.list(SCOPE_A2)).items).toHaveLength(1);
    t.expect(await fx.profiles.remove(SCOPE_A, "never-stored")).toBe(false);
  });
}

/** Scopes whose ids share prefixes and separators: a store that matched a prefix, or joined org and uid carelessly, would mix them. */
const NEIGHBOURS: readonly Scope[] = [
  { org: "clinic", uid: "p1" },
  { org: "clinic", uid: "p10" },
  { org: "clinic", uid: "p1_0" },
  { org: "clinic1", uid: "p1" },
  { org: "clinic", uid: "P1" },
  { org: "clinic-1", uid: "p" },
  { org: "clinic", uid: "p1.x" },
  { org: "clinic.x", uid: "p1" },
];

function isolationTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("scope isolation: 0 leaks across 1,024 cross-scope searches of scopes whose ids share prefixes", async (fx) => {
    const tag = (i: number) => `zq${i}x`;
    for (const [i, scope] of NEIGHBOURS.entries()) {
      for (let j = 0; j < 3; j++) {
        await fx.episodes.put(
          episodeOf(`ep-${j}`, {
            scope,
            summary: `Penicillin allergy told by ${tag(i)} visit ${j}.`,
            source: at(j),
          }),
        );
        await fx.profiles.put(
          factOf(`f-${j}`, {
            scope,
            key: `allergy.k${j}`,
            text: `Penicillin allergy of ${tag(i)}.`,
            source: at(j),
            sensitivity: "internal",
          }),
        );
      }
    }
    const queries = (i: number) => [
      "penicillin allergy",
      tag(i),
      tag((i + 1) % NEIGHBOURS.length),
      "visit",
      "…",
      "zq",
      `${tag(i)} OR *`,
      "allergy*",
    ];
    let attempts = 0;
    let leaks = 0;
    for (let round = 0; round < 8; round++) {
      for (const [i, scope] of NEIGHBOURS.entries()) {
        for (const text of queries(i + round)) {
          const [eps, facts] = await Promise.all([
            fx.episodes.search(scope, { text, ceiling: "restricted", limit: 50 }),
            fx.profiles.search(scope, { text, ceiling: "restricted", limit: 50 }),
          ]);
          attempts += 2;
          for (const h of [...eps, ...facts]) {
            const r = h.record;
            const words = "summary" in r ? r.summary : r.text;
            if (r.scope.org !== scope.org || r.scope.uid !== scope.uid || !words.includes(tag(i)))
              leaks++;
          }
        }
      }
    }
    t.expect(attempts >= 1_000, "at least 1,000 cross-scope attempts").toBe(true);
    t.expect(leaks, "records of another scope returned").toBe(0);
    for (const scope of NEIGHBOURS)
      t.expect((await fx.episodes.list(scope, { limit: 100 })).items).toHaveLength(3);
  });
}

function listTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("list pages every record newest first, a cursor at a time, filtered by session; limits 1 and 100 read, 0 and 101 refused; a forged cursor refused", async (fx) => {
    for (let i = 0; i < 7; i++)
      await fx.episodes.put(
        episodeOf(`ep-${i}`, {
          source: { sessionId: i % 2 === 0 ? "s1" : "s2", turnId: "t", at: T0 + Math.floor(i / 2) },
        }),
      );
    await fx.episodes.put(episodeOf("ep-x", { scope: SCOPE_A2 }));
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.episodes.list(SCOPE_A, { limit: 3, ...(cursor ? { cursor } : {}) });
      t.expect(page.items.length <= 3).toBe(true);
      ids.push(...page.items.map((e) => e.episodeId));
      cursor = page.nextCursor;
    } while (cursor);
    t.expect(ids).toEqual(["ep-6", "ep-5", "ep-4", "ep-3", "ep-2", "ep-1", "ep-0"]);
    t.expect(
      (await fx.episodes.list(SCOPE_A, { sessionId: "s2" })).items.map((e) => e.episodeId),
    ).toEqual(["ep-5", "ep-3", "ep-1"]);
    t.expect((await fx.episodes.list(SCOPE_A, { limit: 7 })).nextCursor).toBeUndefined();
    for (let i = 0; i < 101; i++)
      await fx.profiles.put(
        factOf(`f-${String(i).padStart(3, "0")}`, { key: `k.n${i}`, source: at(i) }),
      );
    t.expect((await fx.profiles.list(SCOPE_A, { limit: 100 })).items).toHaveLength(100);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toHaveLength(50);
    t.expect((await fx.profiles.list(SCOPE_A, { limit: 1 })).items.map((f) => f.factId)).toEqual([
      "f-100",
    ]);
    for (const limit of [0, 101, 1.5, -1])
      await rejects(t, () => fx.profiles.list(SCOPE_A, { limit }), ValidationError);
    for (const cursor of ["not a cursor", "eyJ4IjoxfQ", ""])
      await rejects(t, () => fx.episodes.list(SCOPE_A, { cursor }), ValidationError);
  });
}

function erasureTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  const seed = async (fx: MemoryFixture) => {
    for (const scope of [SCOPE_A, SCOPE_B]) {
      for (const sessionId of ["s1", "s2"]) {
        await fx.episodes.put(
          episodeOf(`ep-${sessionId}`, {
            scope,
            source: { sessionId, turnId: "t", at: T0 },
            summary: `Penicillin allergy in ${sessionId}.`,
          }),
        );
        await fx.profiles.put(
          factOf(`f-${sessionId}`, {
            scope,
            key: `allergy.${sessionId}`,
            source: { sessionId, turnId: "t", at: T0 },
          }),
        );
      }
    }
  };
  const recallable = async (fx: MemoryFixture, scope: Scope) => [
    ...(
      await fx.episodes.search(scope, { text: "penicillin", ceiling: "restricted", limit: 50 })
    ).map((h) => h.record.source.sessionId),
    ...(
      await fx.profiles.search(scope, { text: "penicillin", ceiling: "restricted", limit: 50 })
    ).map((h) => h.record.source.sessionId),
  ];

  test("eraseMemory of a session: its episodes and facts go (counted), nothing of it is searchable or listed; the other session and scope stay; twice erases nothing more", async (fx) => {
    await seed(fx);
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A, sessionId: "s1" })).toEqual({
      episodes: 1,
      facts: 1,
    });
    t.expect((await recallable(fx, SCOPE_A)).sort()).toEqual(["s2", "s2"]);
    t.expect((await fx.episodes.list(SCOPE_A, { sessionId: "s1" })).items).toEqual([]);
    t.expect((await fx.profiles.list(SCOPE_A, { sessionId: "s1" })).items).toEqual([]);
    t.expect((await recallable(fx, SCOPE_B)).sort()).toEqual(["s1", "s1", "s2", "s2"]);
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A, sessionId: "s1" })).toEqual({
      episodes: 0,
      facts: 0,
    });
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A, sessionId: "never" })).toEqual({
      episodes: 0,
      facts: 0,
    });
  });

  test("eraseMemory of a scope: every record of it goes; the other scope stays", async (fx) => {
    await seed(fx);
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A })).toEqual({ episodes: 2, facts: 2 });
    t.expect(await recallable(fx, SCOPE_A)).toEqual([]);
    t.expect((await fx.episodes.list(SCOPE_A)).items).toEqual([]);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toEqual([]);
    t.expect(await recallable(fx, SCOPE_B)).toHaveLength(4);
    t.expect(await fx.erasure.eraseMemory({ scope: SCOPE_A })).toEqual({ episodes: 0, facts: 0 });
  });
}

function concurrencyTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("8 concurrent equal puts store one; 6 concurrent different ones keep one and conflict the rest", async (fx) => {
    const equal = await settleAll(
      Array.from({ length: 8 }, () => fx.episodes.put(episodeOf("ep-1"))),
    );
    t.expect(equal.failed).toEqual([]);
    t.expect(equal.ok.filter((s) => s === "stored")).toHaveLength(1);
    const facts = await settleAll(Array.from({ length: 8 }, () => fx.profiles.put(factOf("f-1"))));
    t.expect(facts.ok.filter((s) => s === "stored")).toHaveLength(1);
    t.expect(facts.ok).toHaveLength(8);
    const different = await settleAll(
      Array.from({ length: 6 }, (_, i) =>
        fx.profiles.put(factOf("f-2", { text: `Variant ${i}.` })),
      ),
    );
    t.expect(different.ok).toEqual(["stored"]);
    for (const error of different.failed) t.expect(error).toBeInstanceOf(MemoryConflictError);
    t.expect((await fx.episodes.list(SCOPE_A)).items).toHaveLength(1);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toHaveLength(2);
  });
}
