import {
  SessionLabelConflictError,
  SessionLabelErasedError,
  type SessionLabelStore,
  ValidationError,
} from "@alma-harness/core";
import {
  type Closable,
  deepFrozen,
  type Factory,
  fixtureTest,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  type TestApi,
  unsafe,
} from "./harness.js";

export interface LabelFixture extends Closable {
  readonly labels: SessionLabelStore;
}

const LABELS = { patient: "p-123", clinic: "north.2" };

/** The `SessionLabelStore` contract: labels stored once, erasure permanent per session or per scope. */
export function sessionLabelStoreContract(
  name: string,
  factory: Factory<LabelFixture>,
  t: TestApi,
): void {
  const test = fixtureTest(t, factory);
  t.describe(`${name}: SessionLabelStore contract`, () => {
    test("put stores the normalized labels once; get reads them frozen", async ({ labels }) => {
      const stored = await labels.put(SCOPE_A, "s1", LABELS);
      t.expect(stored).toEqual({ clinic: "north.2", patient: "p-123" });
      const read = await labels.get(SCOPE_A, "s1");
      t.expect(read).toEqual(LABELS);
      t.expect(deepFrozen(read)).toBe(true);
      t.expect(await labels.get(SCOPE_A, "s2")).toBeUndefined();
    });

    test("an equal replay returns the labels (key order aside); different labels throw SessionLabelConflictError", async ({
      labels,
    }) => {
      await labels.put(SCOPE_A, "s1", LABELS);
      t.expect(await labels.put(SCOPE_A, "s1", { clinic: "north.2", patient: "p-123" })).toEqual(
        LABELS,
      );
      await rejects(
        t,
        () => labels.put(SCOPE_A, "s1", { patient: "p-999" }),
        SessionLabelConflictError,
        "session_label_conflict",
      );
      await rejects(
        t,
        () => labels.put(SCOPE_A, "s1", { ...LABELS, extra: "x" }),
        SessionLabelConflictError,
      );
      t.expect(await labels.get(SCOPE_A, "s1")).toEqual(LABELS);
    });

    test("of concurrent puts with different labels exactly one is stored", async ({ labels }) => {
      const { ok, failed } = await settleAll(
        Array.from({ length: 8 }, (_, i) => labels.put(SCOPE_A, "s1", { n: `v${i}` })),
      );
      t.expect(ok).toHaveLength(1);
      for (const error of failed) t.expect(error).toBeInstanceOf(SessionLabelConflictError);
      t.expect(await labels.get(SCOPE_A, "s1")).toEqual(ok[0]);
    });

    erasureAndScopeTests(t, test);
  });
}

function erasureAndScopeTests(t: TestApi, test: FixtureTest<LabelFixture>): void {
  test("erase(scope, sessionId) tombstones the session: get reads nothing and put throws SessionLabelErasedError", async ({
    labels,
  }) => {
    await labels.put(SCOPE_A, "s1", LABELS);
    await labels.put(SCOPE_A, "s2", LABELS);
    await labels.erase(SCOPE_A, "s1");
    t.expect(await labels.get(SCOPE_A, "s1")).toBeUndefined();
    await rejects(
      t,
      () => labels.put(SCOPE_A, "s1", LABELS),
      SessionLabelErasedError,
      "session_label_erased",
    );
    t.expect(await labels.get(SCOPE_A, "s2")).toEqual(LABELS);
    await labels.erase(SCOPE_A, "never");
    await rejects(t, () => labels.put(SCOPE_A, "never", LABELS), SessionLabelErasedError);
    await labels.erase(SCOPE_A, "s1");
  });

  test("erase(scope) seals the scope: every session, present or future, and no other scope", async ({
    labels,
  }) => {
    await labels.put(SCOPE_A, "s1", LABELS);
    await labels.put(SCOPE_A2, "s1", LABELS);
    await labels.put(SCOPE_B, "s1", LABELS);
    await labels.erase(SCOPE_A);
    t.expect(await labels.get(SCOPE_A, "s1")).toBeUndefined();
    await rejects(t, () => labels.put(SCOPE_A, "s1", LABELS), SessionLabelErasedError);
    await rejects(t, () => labels.put(SCOPE_A, "new", LABELS), SessionLabelErasedError);
    t.expect(await labels.get(SCOPE_A2, "s1")).toEqual(LABELS);
    t.expect(await labels.get(SCOPE_B, "s1")).toEqual(LABELS);
    await labels.put(SCOPE_B, "s2", LABELS);
  });

  test("scope isolation: another scope's session of the same id is another session", async ({
    labels,
  }) => {
    await labels.put(SCOPE_A, "s1", LABELS);
    t.expect(await labels.get(SCOPE_B, "s1")).toBeUndefined();
    t.expect(await labels.get(SCOPE_A2, "s1")).toBeUndefined();
    t.expect(await labels.put(SCOPE_B, "s1", { other: "x" })).toEqual({ other: "x" });
    await labels.erase(SCOPE_B, "s1");
    t.expect(await labels.get(SCOPE_A, "s1")).toEqual(LABELS);
  });

  test("invalid scopes, ids and labels are refused before any I/O (even on a closed store)", async ({
    labels,
  }, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => labels.put(scope, "s1", LABELS),
      (scope) => labels.get(scope, "s1"),
      (scope) => labels.erase(scope, "s1"),
      (scope) => labels.erase(scope),
    );
    await refusesBadIds(
      t,
      (id) => labels.put(SCOPE_A, id, LABELS),
      (id) => labels.get(SCOPE_A, id),
      (id) => labels.erase(SCOPE_A, id),
    );
    const bad: unknown[] = [
      {},
      { Upper: "x" },
      { key: "has space" },
      { key: 1 },
      Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, "v"])),
      [],
    ];
    for (const value of bad)
      await rejects(t, () => labels.put(SCOPE_A, "s1", unsafe(value)), ValidationError);
  });
}
