import {
  ConflictError,
  ErasedError,
  type ExecutionResultStore,
  type ResultReservation,
  ValidationError,
} from "@alma-harness/core";
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

export interface ResultFixture extends Closable {
  readonly results: ExecutionResultStore;
  /** The other namespace (root results), when the implementation builds both: they must not share rows. */
  readonly rootResults?: ExecutionResultStore;
}

type Declare = FixtureTest<ResultFixture>;

const EXPIRES = T0 + 10_000;

export function reservationOf(
  resultId: string,
  over: Partial<ResultReservation> = {},
): ResultReservation {
  return {
    scope: SCOPE_A,
    resultId,
    sessionId: "s1",
    binding: "sha256:aaa",
    sensitivity: "confidential",
    maxChars: 1_000,
    expiresAt: EXPIRES,
    createdAt: T0,
    ...over,
  };
}

const ENVELOPE = { view: "completed", reply: [{ type: "text", text: "hello" }], n: 1 };

/** The `ExecutionResultStore` contract: first-wins identities, one envelope each, tombstones never revived. */
export function executionResultStoreContract(
  name: string,
  factory: Factory<ResultFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: ExecutionResultStore contract`, factory, [
    reserveTests,
    putTests,
    expiryTests,
    isolationTests,
  ]);
}

function reserveTests(t: TestApi, test: Declare): void {
  test("reserve is first-wins: a later reserve returns exists with the first record, whatever its binding", async ({
    results,
  }) => {
    const first = await results.reserve(reservationOf("r1"));
    t.expect(first).toEqual({
      status: "reserved",
      record: {
        resultId: "r1",
        sessionId: "s1",
        binding: "sha256:aaa",
        state: "reserved",
        sensitivity: "confidential",
        expiresAt: EXPIRES,
      },
    });
    t.expect(deepFrozen(first)).toBe(true);
    const again = await results.reserve(
      reservationOf("r1", { binding: "sha256:bbb", sensitivity: "public" }),
    );
    t.expect(again).toEqual({ status: "exists", record: first.record });
  });

  test("of many concurrent reserves of one identity exactly one reserves", async ({ results }) => {
    const { ok } = await settleAll(
      Array.from({ length: 10 }, (_, i) =>
        results.reserve(reservationOf("r1", { binding: `b${i}` })),
      ),
    );
    t.expect(ok.filter((r) => r.status === "reserved")).toHaveLength(1);
    const winner = ok.find((r) => r.status === "reserved")?.record.binding;
    for (const r of ok) t.expect(r.record.binding).toBe(winner);
  });
}

function putTests(t: TestApi, test: Declare): void {
  test("put stores the envelope once on a reserved identity; get returns it frozen", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1"));
    const stored = await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    t.expect([stored.state, stored.envelope]).toEqual(["stored", ENVELOPE]);
    const read = await results.get(SCOPE_A, "r1", T0 + 2);
    t.expect(read).toEqual(stored);
    t.expect(deepFrozen(read)).toBe(true);
  });

  test("an equal second put is a no-op (key order aside); a different one throws ConflictError", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    const replay = await results.put(
      SCOPE_A,
      "r1",
      { n: 1, reply: [{ text: "hello", type: "text" }], view: "completed" },
      T0 + 2,
    );
    t.expect(replay.envelope).toEqual(ENVELOPE);
    await rejects(
      t,
      () => results.put(SCOPE_A, "r1", { ...ENVELOPE, n: 2 }, T0 + 3),
      ConflictError,
    );
    t.expect((await results.get(SCOPE_A, "r1", T0 + 4))?.envelope).toEqual(ENVELOPE);
  });

  test("an envelope whose JSON text is over maxChars throws ValidationError and stores nothing", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1", { maxChars: 7 }));
    await rejects(t, () => results.put(SCOPE_A, "r1", "123456", T0 + 1), ValidationError);
    t.expect((await results.get(SCOPE_A, "r1", T0 + 1))?.state).toBe("reserved");
    t.expect((await results.put(SCOPE_A, "r1", "12345", T0 + 1)).envelope).toBe("12345");
  });

  test("put on an identity never reserved is refused with a conflict", async ({ results }) => {
    await rejects(t, () => results.put(SCOPE_A, "nope", ENVELOPE, T0), ConflictError);
    t.expect(await results.get(SCOPE_A, "nope", T0)).toBeUndefined();
  });

  test("put refuses input that is not plain JSON", async ({ results }) => {
    await results.reserve(reservationOf("r1"));
    for (const envelope of [{ n: Number.POSITIVE_INFINITY }, new Date(0), { f: () => 1 }]) {
      await rejects(t, () => results.put(SCOPE_A, "r1", unsafe(envelope), T0 + 1), ValidationError);
    }
  });
}

function expiryTests(t: TestApi, test: Declare): void {
  test("get reports expired at or after expiresAt and never returns the envelope", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    t.expect((await results.get(SCOPE_A, "r1", EXPIRES - 1))?.state).toBe("stored");
    const expired = await results.get(SCOPE_A, "r1", EXPIRES);
    t.expect([expired?.state, expired?.envelope]).toEqual(["expired", undefined]);
    await results.reserve(reservationOf("r2"));
    t.expect((await results.get(SCOPE_A, "r2", EXPIRES + 1))?.state).toBe("expired");
  });

  test("put at or after expiresAt throws ErasedError", async ({ results }) => {
    await results.reserve(reservationOf("r1"));
    await rejects(t, () => results.put(SCOPE_A, "r1", ENVELOPE, EXPIRES), ErasedError);
  });

  test("eraseSession tombstones every result of the session; a tombstone cannot be revived", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    await results.reserve(reservationOf("r2"));
    await results.reserve(reservationOf("r3", { sessionId: "s2" }));
    t.expect(await results.eraseSession(SCOPE_A, "s1")).toBe(2);
    const erased = await results.get(SCOPE_A, "r1", T0 + 2);
    t.expect([erased?.state, erased?.envelope]).toEqual(["erased", undefined]);
    await rejects(t, () => results.put(SCOPE_A, "r1", ENVELOPE, T0 + 3), ErasedError);
    await rejects(t, () => results.put(SCOPE_A, "r2", ENVELOPE, T0 + 3), ErasedError);
    const again = await results.reserve(reservationOf("r2"));
    t.expect([again.status, again.record.state]).toEqual(["exists", "erased"]);
    t.expect((await results.get(SCOPE_A, "r3", T0 + 3))?.state).toBe("reserved");
    t.expect(await results.eraseSession(SCOPE_A, "s1")).toBe(0);
  });

  test("purgeExpired drops envelopes past expiry for good, in every scope", async ({ results }) => {
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    await results.reserve(reservationOf("r1", { scope: SCOPE_B }));
    await results.reserve(reservationOf("r-late", { expiresAt: EXPIRES + 1 }));
    t.expect(await results.purgeExpired(EXPIRES - 1)).toBe(0);
    t.expect(await results.purgeExpired(EXPIRES)).toBe(2);
    const read = await results.get(SCOPE_A, "r1", T0 + 2);
    t.expect([read?.state, read?.envelope]).toEqual(["expired", undefined]);
    await rejects(t, () => results.put(SCOPE_B, "r1", ENVELOPE, T0 + 2), ErasedError);
    t.expect((await results.get(SCOPE_A, "r-late", T0 + 2))?.state).toBe("reserved");
    t.expect(await results.purgeExpired(EXPIRES)).toBe(0);
  });
}

function isolationTests(t: TestApi, test: Declare): void {
  test("scope isolation: another scope neither reads, writes nor erases the identity", async ({
    results,
  }) => {
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    for (const other of [SCOPE_A2, SCOPE_B]) {
      t.expect(await results.get(other, "r1", T0 + 2)).toBeUndefined();
      await rejects(t, () => results.put(other, "r1", ENVELOPE, T0 + 2), ConflictError);
      t.expect(await results.eraseSession(other, "s1")).toBe(0);
    }
    t.expect((await results.get(SCOPE_A, "r1", T0 + 2))?.envelope).toEqual(ENVELOPE);
    t.expect((await results.reserve(reservationOf("r1", { scope: SCOPE_B }))).status).toBe(
      "reserved",
    );
  });

  test("step results and root results are separate namespaces", async ({
    results,
    rootResults,
  }) => {
    if (!rootResults) return;
    t.expect(rootResults).not.toBe(results);
    await results.reserve(reservationOf("r1"));
    await results.put(SCOPE_A, "r1", ENVELOPE, T0 + 1);
    t.expect(await rootResults.get(SCOPE_A, "r1", T0 + 1)).toBeUndefined();
    t.expect((await rootResults.reserve(reservationOf("r1", { binding: "root" }))).status).toBe(
      "reserved",
    );
    t.expect(await rootResults.eraseSession(SCOPE_A, "s1")).toBe(1);
    t.expect((await results.get(SCOPE_A, "r1", T0 + 2))?.state).toBe("stored");
    t.expect(await results.purgeExpired(EXPIRES)).toBe(1);
    t.expect((await rootResults.get(SCOPE_A, "r1", T0 + 2))?.state).toBe("erased");
  });

  test("invalid scopes, ids and reservations are refused before any I/O (even on a closed store)", async ({
    results,
  }, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => results.reserve(reservationOf("r1", { scope })),
      (scope) => results.put(scope, "r1", ENVELOPE, T0),
      (scope) => results.get(scope, "r1", T0),
      (scope) => results.eraseSession(scope, "s1"),
    );
    await refusesBadIds(
      t,
      (id) => results.reserve(reservationOf(id)),
      (id) => results.reserve(reservationOf("r1", { sessionId: id })),
      (id) => results.put(SCOPE_A, id, ENVELOPE, T0),
      (id) => results.get(SCOPE_A, id, T0),
      (id) => results.eraseSession(SCOPE_A, id),
    );
    const bad: unknown[] = [
      { sensitivity: "secret" },
      { maxChars: 0 },
      { expiresAt: T0 },
      { createdAt: -5 },
      { extra: 1 },
    ];
    for (const over of bad)
      await rejects(t, () => results.reserve(reservationOf("r1", unsafe(over))), ValidationError);
    await rejects(t, () => results.purgeExpired(unsafe(Number.NaN)), ValidationError);
  });
}
