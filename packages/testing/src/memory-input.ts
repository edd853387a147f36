import {
  InvalidIdError,
  InvalidScopeError,
  type MemorySearch,
  ValidationError,
} from "@alma-harness/core";
import {
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";
import { episodeOf, factOf, type MemoryFixture } from "./memory.js";

/** A value planted in hostile input: no error message may carry it. */
const CANARY = "Zebulon-Quackenbush-4711";

/** Full-text syntax of FTS5 and of `tsquery`, in a query: never syntax, never an error, never a wider result. */
const SYNTAX: readonly string[] = [
  '"',
  "'",
  "*",
  '"penicillin',
  "penicillin*",
  "penicillin OR *",
  "NEAR(penicillin allergy, 2)",
  "penicillin NOT flu",
  "-flu",
  "^penicillin",
  "summary:penicillin",
  "allergy & !penicillin",
  "allergy | penicillin",
  "!penicillin",
  "penicillin:*",
  "penicillin <-> allergy",
  "(penicillin",
  "penicillin)",
  "{summary}: flu",
  "%_\\",
  "'; DROP TABLE memory_episodes; --",
  "AND OR NOT",
  "\u0000",
  "\ud800",
  "penicillin\u0000flu",
];

/** The words of a query as a plain query (what a search of it must equal): letters and digits only, space-separated. */
const plain = (text: string) =>
  text
    .toLowerCase()
    .match(/[\p{L}\p{N}]+/gu)
    ?.join(" ") ?? "…";

export function memoryInputTests(t: TestApi, test: FixtureTest<MemoryFixture>): void {
  test("full-text syntax in a query (quotes, *, NEAR, :, -, ^, &|!, parentheses, NUL, a lone surrogate) never throws and never widens: it equals the plain query of its words, one scope and ceiling", async (fx) => {
    await fx.episodes.put(
      episodeOf("ep-a", {
        summary: "Penicillin allergy: hives (2019).",
        source: { sessionId: "s1", turnId: "t", at: T0 + 1 },
      }),
    );
    await fx.episodes.put(
      episodeOf("ep-b", {
        summary: "Flu shot booked; summary sent.",
        source: { sessionId: "s1", turnId: "t", at: T0 + 2 },
      }),
    );
    await fx.episodes.put(
      episodeOf("ep-c", {
        summary: 'Quotes "and" stars * and NEAR(x) & | ! : stored as text.',
        sensitivity: "restricted",
        source: { sessionId: "s1", turnId: "t", at: T0 + 3 },
      }),
    );
    await fx.episodes.put(
      episodeOf("ep-z", {
        scope: { org: "org-a", uid: "user-10" },
        summary: "Penicillin flu allergy summary.",
      }),
    );
    await fx.profiles.put(factOf("f-a", { text: "Penicillin: hives & swelling!" }));
    for (const text of SYNTAX) {
      const ask = (q: string): MemorySearch => ({ text: q, ceiling: "confidential", limit: 50 });
      const got = (await fx.episodes.search(SCOPE_A, ask(text))).map((h) => h.record.episodeId);
      const want = (await fx.episodes.search(SCOPE_A, ask(plain(text)))).map(
        (h) => h.record.episodeId,
      );
      t.expect(got, `episodes for ${JSON.stringify(text)}`).toEqual(want);
      t.expect(
        got.includes("ep-c") || got.includes("ep-z"),
        "never above the ceiling, never another scope",
      ).toBe(false);
      const facts = (await fx.profiles.search(SCOPE_A, ask(text))).map((h) => h.record.factId);
      t.expect(facts, `facts for ${JSON.stringify(text)}`).toEqual(
        (await fx.profiles.search(SCOPE_A, ask(plain(text)))).map((h) => h.record.factId),
      );
    }
    t.expect(
      (await fx.episodes.list(SCOPE_A)).items.find((e) => e.episodeId === "ep-c")?.summary,
      "syntax in stored text is kept as written",
    ).toBe('Quotes "and" stars * and NEAR(x) & | ! : stored as text.');
  });

  test("hostile input is refused before any I/O with a typed error naming the rule, never the value: a Proxy, a getter, an unknown field, a symbol key, a non-object", async (fx) => {
    let reads = 0;
    const getter = { ...episodeOf("ep-1") };
    Object.defineProperty(getter, "summary", {
      enumerable: true,
      get: () => {
        reads++;
        return CANARY;
      },
    });
    const hostile: readonly unknown[] = [
      new Proxy(episodeOf("ep-1"), {}),
      getter,
      { ...episodeOf("ep-1"), extra: CANARY },
      { ...episodeOf("ep-1"), [Symbol("x")]: CANARY },
      { ...episodeOf("ep-1"), source: new Proxy({ sessionId: CANARY, turnId: "t", at: T0 }, {}) },
      { ...episodeOf("ep-1"), source: { sessionId: "s1", turnId: "t", at: T0, [CANARY]: 1 } },
      null,
      CANARY,
      [episodeOf("ep-1")],
    ];
    for (const input of hostile) {
      const e = await rejects(t, () => fx.episodes.put(unsafe(input)), ValidationError);
      t.expect(e.message.includes(CANARY), "the error never carries the value").toBe(false);
      t.expect(typeof (e as ValidationError).rule).toBe("string");
    }
    for (const input of [new Proxy(factOf("f-1"), {}), { ...factOf("f-1"), note: CANARY }])
      await rejects(t, () => fx.profiles.put(unsafe(input)), ValidationError);
    const search = [
      new Proxy({ text: "x", ceiling: "internal", limit: 1 }, {}),
      { text: "x", ceiling: "internal", limit: 1, widen: true },
      null,
    ];
    for (const q of search)
      await rejects(t, () => fx.episodes.search(SCOPE_A, unsafe(q)), ValidationError);
    await rejects(
      t,
      () => fx.profiles.list(SCOPE_A, unsafe({ limit: 1, all: true })),
      ValidationError,
    );
    await rejects(
      t,
      () => fx.erasure.eraseMemory(unsafe({ scope: SCOPE_A, everything: true })),
      ValidationError,
    );
    t.expect(reads, "a getter never runs").toBe(0);
    t.expect((await fx.episodes.list(SCOPE_A)).items).toEqual([]);
  });

  test("bad scopes and ids are refused on every method; sensitivity is a closed union", async (fx) => {
    await refusesBadScopes(
      t,
      (scope) => fx.episodes.put(episodeOf("ep-1", { scope })),
      (scope) => fx.profiles.put(factOf("f-1", { scope })),
      (scope) => fx.episodes.search(scope, { text: "x", ceiling: "internal", limit: 1 }),
      (scope) => fx.profiles.search(scope, { text: "x", ceiling: "internal", limit: 1 }),
      (scope) => fx.episodes.list(scope),
      (scope) => fx.profiles.list(scope),
      (scope) => fx.profiles.remove(scope, "f-1"),
      (scope) => fx.erasure.eraseMemory({ scope }),
    );
    await refusesBadIds(
      t,
      (id) => fx.episodes.put(episodeOf(id)),
      (id) => fx.profiles.put(factOf(id)),
      (id) => fx.profiles.put(factOf("f-1", { source: { sessionId: id, turnId: "t", at: T0 } })),
      (id) =>
        fx.episodes.put(episodeOf("ep-1", { source: { sessionId: "s", turnId: id, at: T0 } })),
      (id) => fx.profiles.remove(SCOPE_A, id),
      (id) => fx.episodes.list(SCOPE_A, { sessionId: id }),
      (id) => fx.erasure.eraseMemory({ scope: SCOPE_A, sessionId: id }),
    );
    for (const sensitivity of ["secret", "PUBLIC", "", null]) {
      await rejects(
        t,
        () => fx.episodes.put(episodeOf("ep-1", unsafe({ sensitivity }))),
        ValidationError,
      );
      await rejects(
        t,
        () => fx.profiles.put(factOf("f-1", unsafe({ sensitivity }))),
        ValidationError,
      );
      await rejects(
        t,
        () => fx.episodes.search(SCOPE_A, unsafe({ text: "x", ceiling: sensitivity, limit: 1 })),
        ValidationError,
      );
    }
    await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-1", unsafe({ undelivered: false }))),
      ValidationError,
    );
    for (const at of [-1, 1.5, Number.NaN, "2026-01-01"])
      await rejects(
        t,
        () =>
          fx.episodes.put(
            episodeOf("ep-1", unsafe({ source: { sessionId: "s", turnId: "t", at } })),
          ),
        ValidationError,
      );
    t.expect((await fx.episodes.list(SCOPE_A)).items).toEqual([]);
    t.expect((await fx.profiles.list(SCOPE_A)).items).toEqual([]);
  });

  test("every limit at the limit and one over: ids 128/129, summary 4 KiB/+1 byte (multi-byte too), fact 1 KiB/+1, key 64/65 and its pattern, confidence 0..1, query 1 B–4 KiB, search limit 1–50", async (fx) => {
    t.expect(await fx.episodes.put(episodeOf("e".repeat(128)))).toBe("stored");
    await rejects(t, () => fx.episodes.put(episodeOf("e".repeat(129))), InvalidIdError);
    await rejects(t, () => fx.profiles.put(factOf("f".repeat(129))), InvalidIdError);
    t.expect(await fx.episodes.put(episodeOf("ep-max", { summary: "a".repeat(4096) }))).toBe(
      "stored",
    );
    t.expect(await fx.episodes.put(episodeOf("ep-max-2", { summary: "é".repeat(2048) }))).toBe(
      "stored",
    );
    await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-over", { summary: "a".repeat(4097) })),
      ValidationError,
    );
    await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-over", { summary: `${"é".repeat(2048)}a` })),
      ValidationError,
    );
    for (const summary of ["", "a\u0000b", "a\u0007b", "a\ud800b"])
      await rejects(t, () => fx.episodes.put(episodeOf("ep-bad", { summary })), ValidationError);
    t.expect(
      await fx.profiles.put(factOf("f-max", { text: "a".repeat(1024), key: `a${"b".repeat(63)}` })),
    ).toBe("stored");
    await rejects(
      t,
      () => fx.profiles.put(factOf("f-over", { text: "a".repeat(1025) })),
      ValidationError,
    );
    for (const key of [
      `a${"b".repeat(64)}`,
      "Allergy",
      "1allergy",
      "allergy penicillin",
      "",
      "allergé",
    ])
      await rejects(t, () => fx.profiles.put(factOf("f-key", { key })), ValidationError);
    t.expect(await fx.profiles.put(factOf("f-c0", { key: "c.zero", confidence: 0 }))).toBe(
      "stored",
    );
    t.expect(await fx.profiles.put(factOf("f-c1", { key: "c.one", confidence: 1 }))).toBe("stored");
    for (const confidence of [-0.0001, 1.0001, Number.NaN, Number.POSITIVE_INFINITY, "0.5"])
      await rejects(
        t,
        () => fx.profiles.put(factOf("f-c", unsafe({ confidence }))),
        ValidationError,
      );
    const q = (text: string, limit = 1) => ({ text, ceiling: "restricted" as const, limit });
    t.expect((await fx.episodes.search(SCOPE_A, q("a".repeat(4096)))).length <= 1).toBe(true);
    t.expect((await fx.episodes.search(SCOPE_A, q("ep", 50))).length <= 50).toBe(true);
    await rejects(t, () => fx.episodes.search(SCOPE_A, q("a".repeat(4097))), ValidationError);
    await rejects(t, () => fx.episodes.search(SCOPE_A, q("")), ValidationError);
    for (const limit of [0, 51, 1.5, -1])
      await rejects(t, () => fx.profiles.search(SCOPE_A, q("a", limit)), ValidationError);
    t.expect(
      (await fx.episodes.list(SCOPE_A, { limit: 100 })).items.map((e) => e.episodeId).sort(),
    ).toEqual(["e".repeat(128), "ep-max", "ep-max-2"].sort());
  });

  test("a bad scope is refused as a scope, even with an otherwise hostile record", async (fx) => {
    await rejects(
      t,
      () => fx.episodes.put(episodeOf("ep-1", unsafe({ scope: { org: "org a", uid: "u" } }))),
      InvalidScopeError,
    );
  });
}
