import {
  type CostSettlementStore,
  erasedSessionMark,
  type SessionErasure,
  type SpendStore,
  type UsageInbox,
  type UsageObservation,
  UsageObservationConflictError,
  ValidationError,
} from "@alma-harness/core";
import { StoreFaults } from "./faults.js";
import {
  type Closable,
  contractSuite,
  deepFrozen,
  type Factory,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";

export interface UsageInboxFixture extends Closable {
  readonly usageInbox: UsageInbox;
  /** When the set has them: erasure is checked to pseudonymize, and the money stores to stay untouched. */
  readonly erasure?: SessionErasure;
  readonly settlements?: CostSettlementStore;
  readonly spend?: SpendStore;
}

/** One late observation of `operationId` (a main call's stream that finished after its round timed out). */
export function observationOf(
  operationId: string,
  over: Partial<UsageObservation> = {},
): UsageObservation {
  return {
    scope: SCOPE_A,
    sessionId: "s1",
    rootKey: "root-1",
    turnId: "turn-1",
    operationId,
    kind: "main",
    clientId: "anthropic",
    model: "claude-x",
    attribution: "known",
    usage: { inputTokens: 1_200, outputTokens: 340 },
    source: "stream_after_timeout",
    observedAt: T0,
    ...over,
  };
}

/** The `UsageInbox` contract: one record per (scope, call, source), equal replays, conflicts typed, scoped listing, erasure by mark. */
export function usageInboxContract(
  name: string,
  factory: Factory<UsageInboxFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: UsageInbox contract`, factory, [
    recordTests,
    concurrencyTests,
    listingTests,
    inputTests,
    erasureTests,
  ]);
}

function recordTests(t: TestApi, test: FixtureTest<UsageInboxFixture>): void {
  test("record keeps the observation once; list reads it frozen; nothing else moves", async (fx) => {
    const first = await fx.usageInbox.record(observationOf("op-1"));
    t.expect(first.status).toBe("recorded");
    t.expect(first.observation).toEqual(observationOf("op-1"));
    const page = await fx.usageInbox.list(SCOPE_A);
    t.expect(page.items).toEqual([observationOf("op-1")]);
    t.expect(page.nextCursor).toBeUndefined();
    t.expect(deepFrozen(page.items)).toBe(true);
    // No billing authority: no receipt, no spend.
    if (fx.settlements) t.expect((await fx.settlements.list(SCOPE_A)).items).toEqual([]);
    if (fx.spend)
      t.expect(await fx.spend.peek(SCOPE_A, "s1", "2026-01-01")).toEqual({
        sessionMicros: 0,
        tenantDayMicros: 0,
      });
  });

  test("the same observation again is replayed (its first observedAt kept); a different one conflicts; another source is another record", async (fx) => {
    await fx.usageInbox.record(observationOf("op-1"));
    const again = await fx.usageInbox.record(
      observationOf("op-1", {
        observedAt: T0 + 5_000,
        usage: { outputTokens: 340, inputTokens: 1_200 },
      }),
    );
    t.expect(again).toEqual({ status: "replayed", observation: observationOf("op-1") });
    await rejects(
      t,
      () =>
        fx.usageInbox.record(
          observationOf("op-1", { usage: { inputTokens: 1_200, outputTokens: 341 } }),
        ),
      UsageObservationConflictError,
      "usage_observation_conflict",
    );
    await rejects(
      t,
      () => fx.usageInbox.record(observationOf("op-1", { attribution: "unpriced" })),
      UsageObservationConflictError,
    );
    await rejects(
      t,
      () => fx.usageInbox.record(observationOf("op-1", { sessionId: "s2" })),
      UsageObservationConflictError,
    );
    const report = await fx.usageInbox.record(
      observationOf("op-1", { source: "provider_report", observedAt: T0 + 1 }),
    );
    t.expect(report.status).toBe("recorded");
    t.expect((await fx.usageInbox.list(SCOPE_A)).items.map((o) => o.source)).toEqual([
      "stream_after_timeout",
      "provider_report",
    ]);
  });

  test("executed, then reported a failure: the caller's retry is a replay, never a second record", async (fx) => {
    const faults = new StoreFaults({ seed: 1, rate: 1, afterShare: 1 });
    const faulty = faults.wrap("usageInbox", fx.usageInbox);
    await rejects(t, () => faulty.record(observationOf("op-1")), Error, "store_unavailable");
    t.expect(faults.counts().after).toBe(1);
    t.expect((await fx.usageInbox.record(observationOf("op-1"))).status).toBe("replayed");
    const before = new StoreFaults({ seed: 1, rate: 1, afterShare: 0 }).wrap(
      "usageInbox",
      fx.usageInbox,
    );
    await rejects(t, () => before.record(observationOf("op-2")), Error, "store_unavailable");
    t.expect((await fx.usageInbox.record(observationOf("op-2"))).status).toBe("recorded");
    t.expect((await fx.usageInbox.list(SCOPE_A)).items).toHaveLength(2);
  });
}

function concurrencyTests(t: TestApi, test: FixtureTest<UsageInboxFixture>): void {
  test("of concurrent equal records exactly one is recorded, the rest replayed", async (fx) => {
    const { ok, failed } = await settleAll(
      Array.from({ length: 8 }, (_, i) =>
        fx.usageInbox.record(observationOf("op-1", { observedAt: T0 + i })),
      ),
    );
    t.expect(failed).toEqual([]);
    t.expect(ok.filter((r) => r.status === "recorded")).toHaveLength(1);
    t.expect((await fx.usageInbox.list(SCOPE_A)).items).toHaveLength(1);
  });

  test("of concurrent different records of one call and source exactly one is kept, the others conflict", async (fx) => {
    const { ok, failed } = await settleAll(
      Array.from({ length: 6 }, (_, i) =>
        fx.usageInbox.record(observationOf("op-1", { usage: { inputTokens: i, outputTokens: 1 } })),
      ),
    );
    t.expect(ok).toHaveLength(1);
    for (const error of failed) t.expect(error).toBeInstanceOf(UsageObservationConflictError);
    t.expect((await fx.usageInbox.list(SCOPE_A)).items).toEqual([ok[0]?.observation]);
  });
}

function listingTests(t: TestApi, test: FixtureTest<UsageInboxFixture>): void {
  test("list is one scope's, ascending by (observedAt, operationId, source), a cursor at a time; filtered by session", async (fx) => {
    for (const [i, id] of ["op-c", "op-a", "op-b", "op-d", "op-e"].entries()) {
      await fx.usageInbox.record(
        observationOf(id, {
          observedAt: T0 + (i < 3 ? 0 : i),
          sessionId: i % 2 === 0 ? "s1" : "s2",
        }),
      );
    }
    await fx.usageInbox.record(observationOf("op-a", { scope: SCOPE_A2 }));
    await fx.usageInbox.record(observationOf("op-a", { scope: SCOPE_B }));
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.usageInbox.list(SCOPE_A, { limit: 2, ...(cursor ? { cursor } : {}) });
      t.expect(page.items.length <= 2).toBe(true);
      ids.push(...page.items.map((o) => o.operationId));
      cursor = page.nextCursor;
    } while (cursor);
    t.expect(ids).toEqual(["op-a", "op-b", "op-c", "op-d", "op-e"]);
    t.expect(
      (await fx.usageInbox.list(SCOPE_A, { sessionId: "s2" })).items.map((o) => o.operationId),
    ).toEqual(["op-a", "op-d"]);
    t.expect((await fx.usageInbox.list(SCOPE_A2)).items).toHaveLength(1);
    t.expect((await fx.usageInbox.list({ org: "org-c", uid: "nobody" })).items).toEqual([]);
  });

  test("page limits: 1 and 100 are read, 0 and 101 refused; a forged cursor is refused", async (fx) => {
    for (let i = 0; i < 101; i++)
      await fx.usageInbox.record(observationOf(`op-${String(i).padStart(3, "0")}`));
    t.expect((await fx.usageInbox.list(SCOPE_A, { limit: 100 })).items).toHaveLength(100);
    t.expect((await fx.usageInbox.list(SCOPE_A)).items).toHaveLength(50);
    const one = await fx.usageInbox.list(SCOPE_A, { limit: 1 });
    t.expect(one.items).toHaveLength(1);
    for (const limit of [0, 101, 1.5, -1])
      await rejects(t, () => fx.usageInbox.list(SCOPE_A, { limit }), ValidationError);
    for (const cursor of ["not a cursor", "eyJ4IjoxfQ", ""])
      await rejects(t, () => fx.usageInbox.list(SCOPE_A, { cursor }), ValidationError);
    await rejects(
      t,
      () => fx.usageInbox.list(SCOPE_A, unsafe({ limit: 1, extra: true })),
      ValidationError,
    );
  });
}

function inputTests(t: TestApi, test: FixtureTest<UsageInboxFixture>): void {
  test("ids at 200 characters are kept, at 201 refused; usage at the safe-integer limit kept, over it refused", async (fx) => {
    const long = "x".repeat(200);
    const at = await fx.usageInbox.record(
      observationOf(long, {
        sessionId: long,
        rootKey: long,
        turnId: long,
        clientId: long,
        model: long,
      }),
    );
    t.expect(at.observation.operationId).toBe(long);
    const max = await fx.usageInbox.record(
      observationOf("op-max", { usage: { inputTokens: Number.MAX_SAFE_INTEGER, outputTokens: 0 } }),
    );
    t.expect(max.observation.usage.inputTokens).toBe(Number.MAX_SAFE_INTEGER);
    for (const field of [
      "sessionId",
      "rootKey",
      "turnId",
      "operationId",
      "clientId",
      "model",
    ] as const) {
      await rejects(
        t,
        () => fx.usageInbox.record(observationOf("op-1", { [field]: "y".repeat(201) })),
        Error,
      );
    }
    for (const usage of [
      { inputTokens: Number.MAX_SAFE_INTEGER + 1, outputTokens: 0 },
      { inputTokens: -1, outputTokens: 0 },
      { inputTokens: 1.5, outputTokens: 0 },
      { inputTokens: 1, outputTokens: 1, prompt: 3 },
    ]) {
      await rejects(
        t,
        () => fx.usageInbox.record(observationOf("op-1", { usage: unsafe(usage) })),
        ValidationError,
      );
    }
    t.expect((await fx.usageInbox.list(SCOPE_A)).items).toHaveLength(2);
  });

  test("hostile and invalid input is refused typed, before any I/O (even on a closed store)", async (fx, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => fx.usageInbox.record(observationOf("op-1", { scope })),
      (scope) => fx.usageInbox.list(scope),
    );
    await refusesBadIds(
      t,
      (id) => fx.usageInbox.record(observationOf(id)),
      (id) => fx.usageInbox.record(observationOf("op-1", { sessionId: id })),
      (id) => fx.usageInbox.list(SCOPE_A, { sessionId: id }),
    );
    let read = false;
    const getter = Object.defineProperty({ ...observationOf("op-1") }, "model", {
      enumerable: true,
      get: () => {
        read = true;
        return "claude-x";
      },
    });
    const proxy = new Proxy(observationOf("op-1"), {
      get: () => {
        read = true;
        return "x";
      },
    });
    const bad: unknown[] = [
      null,
      "op-1",
      [],
      getter,
      proxy,
      { ...observationOf("op-1"), text: "the patient said" },
      { ...observationOf("op-1"), kind: "tool" },
      { ...observationOf("op-1"), source: "guess" },
      { ...observationOf("op-1"), attribution: "unknown" },
      { ...observationOf("op-1"), observedAt: -1 },
      { ...observationOf("op-1"), observedAt: "2026-01-01" },
      { ...observationOf("op-1"), usage: { inputTokens: 1, outputTokens: 1, serviceTier: "gold" } },
    ];
    for (const value of bad)
      await rejects(t, () => fx.usageInbox.record(unsafe(value)), ValidationError);
    t.expect(read, "no getter or proxy trap ran").toBe(false);
  });
}

function erasureTests(t: TestApi, test: FixtureTest<UsageInboxFixture>): void {
  test("erasing a session keeps its observations under the session's mark; a late replay stays a replay under the mark", async (fx) => {
    if (!fx.erasure) return;
    await fx.usageInbox.record(observationOf("op-1"));
    await fx.usageInbox.record(observationOf("op-2", { sessionId: "s2" }));
    await fx.usageInbox.record(observationOf("op-3", { scope: SCOPE_B }));
    await fx.erasure.eraseSession(SCOPE_A, "s1", { auditSessionId: "s1-pseudonym" });
    const mark = erasedSessionMark(SCOPE_A, "s1");
    const items = (await fx.usageInbox.list(SCOPE_A)).items;
    t.expect(items.map((o) => [o.operationId, o.sessionId])).toEqual([
      ["op-1", mark],
      ["op-2", "s2"],
    ]);
    t.expect(items[0]?.usage).toEqual(observationOf("op-1").usage);
    t.expect((await fx.usageInbox.list(SCOPE_A, { sessionId: "s1" })).items).toEqual([]);
    const replay = await fx.usageInbox.record(observationOf("op-1", { observedAt: T0 + 9 }));
    t.expect(replay.status).toBe("replayed");
    t.expect(replay.observation.sessionId).toBe(mark);
    await fx.erasure.eraseScope(SCOPE_A);
    t.expect((await fx.usageInbox.list(SCOPE_A)).items.map((o) => o.sessionId)).toEqual([
      mark,
      erasedSessionMark(SCOPE_A, "s2"),
    ]);
    t.expect((await fx.usageInbox.list(SCOPE_B)).items.map((o) => o.sessionId)).toEqual(["s1"]);
    await fx.erasure.eraseScope(SCOPE_A);
    t.expect((await fx.usageInbox.list(SCOPE_A)).items.map((o) => o.sessionId)).toEqual([
      mark,
      erasedSessionMark(SCOPE_A, "s2"),
    ]);
  });
}
