import {
  ConflictError,
  type ExecutionClaim,
  type ExecutionRecord,
  type ExecutionStore,
  type Fence,
  StaleFenceError,
  ValidationError,
} from "@alma-harness/core";
import {
  type Closable,
  contractSuite,
  deepFrozen,
  type Factory,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopeFilters,
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
import { listingTests } from "./listing.js";

export interface ExecutionFixture extends Closable {
  readonly execution: ExecutionStore;
}

type Declare = FixtureTest<ExecutionFixture>;

export function claimOf(operationId: string, over: Partial<ExecutionClaim> = {}): ExecutionClaim {
  return {
    scope: SCOPE_A,
    operationId,
    sessionId: "s1",
    rootKey: "root-1",
    turnId: "turn-1",
    kind: "main",
    clientId: "anthropic",
    model: "claude-test",
    priceVersion: "prices-1",
    policyVersion: "policy-1",
    createdAt: T0,
    deadlineAt: T0 + 60_000,
    ...over,
  };
}

async function claimed(
  store: ExecutionStore,
  operationId: string,
  over: Partial<ExecutionClaim> = {},
): Promise<Fence> {
  const result = await store.claim(claimOf(operationId, over));
  if (result.status !== "claimed") throw new Error(`expected a fence for ${operationId}`);
  return result.fence;
}

const KNOWN = {
  status: "known",
  usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 0 },
} as const;

/** The `ExecutionStore` contract: first claim wins the fence; fenced transitions; the sweep never re-sends. */
export function executionStoreContract(
  name: string,
  factory: Factory<ExecutionFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: ExecutionStore contract`, factory, [
    claimTests,
    transitionTests,
    sweepTests,
    readTests,
    validationTests,
  ]);
}

function claimTests(t: TestApi, test: Declare): void {
  test("the first claim receives a fence and a prepared record", async ({ execution }) => {
    const result = await execution.claim(claimOf("op-1"));
    t.expect(result.status).toBe("claimed");
    if (result.status !== "claimed") return;
    t.expect(result.fence).toEqual({
      scope: SCOPE_A,
      operationId: "op-1",
      token: result.record.fenceToken,
    });
    t.expect(result.record).toEqual({
      ...claimOf("op-1"),
      state: "prepared",
      fenceToken: result.fence.token,
      updatedAt: T0,
    });
    t.expect(deepFrozen(result)).toBe(true);
  });

  test("a retry with equal input gets exists and never a fence, whatever state the record reached", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    const retry = await execution.claim(claimOf("op-1"));
    t.expect(retry).toEqual({ status: "exists", record: await execution.get(SCOPE_A, "op-1") });
    await execution.dispatch(fence, T0 + 1);
    const later = await execution.claim(claimOf("op-1"));
    t.expect(later.status === "exists" ? later.record.state : "claimed").toBe("dispatching");
    t.expect("fence" in later).toBe(false);
  });

  test("a claim of an existing operation with different input throws ConflictError", async ({
    execution,
  }) => {
    await claimed(execution, "op-1");
    for (const over of [
      { model: "other" },
      { createdAt: T0 + 1 },
      { priceVersion: "prices-2" },
      { kind: "summary" as const },
    ]) {
      await rejects(t, () => execution.claim(claimOf("op-1", over)), ConflictError);
    }
    t.expect((await execution.get(SCOPE_A, "op-1"))?.model).toBe("claude-test");
  });

  test("of many concurrent claims of one operation exactly one receives a fence", async ({
    execution,
  }) => {
    const { ok } = await settleAll(
      Array.from({ length: 10 }, () => execution.claim(claimOf("op-1"))),
    );
    t.expect(ok).toHaveLength(10);
    t.expect(ok.filter((r) => r.status === "claimed")).toHaveLength(1);
  });

  test("the same operation id in another scope is another operation", async ({ execution }) => {
    await claimed(execution, "op-1");
    await claimed(execution, "op-1", { scope: SCOPE_B });
    await claimed(execution, "op-1", { scope: SCOPE_A2 });
  });
}

function transitionTests(t: TestApi, test: Declare): void {
  test("prepared → dispatching → received → settled → completed, each stamped with its now", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    t.expect((await execution.dispatch(fence, T0 + 1)).state).toBe("dispatching");
    const received = await execution.receive(fence, KNOWN, T0 + 2);
    t.expect([received.state, received.evidence, received.updatedAt]).toEqual([
      "received",
      KNOWN,
      T0 + 2,
    ]);
    const settled = await execution.settle(fence, "settle-1", T0 + 3);
    t.expect([settled.state, settled.settlementId]).toEqual(["settled", "settle-1"]);
    const done = await execution.complete(fence, T0 + 4);
    t.expect(done).toEqual({ ...settled, state: "completed", updatedAt: T0 + 4 });
    t.expect(await execution.get(SCOPE_A, "op-1")).toEqual(done);
    t.expect(deepFrozen(done)).toBe(true);
  });

  test("dispatch cannot be replayed, and a transition from the wrong state throws StaleFenceError", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    await rejects(t, () => execution.receive(fence, KNOWN, T0 + 1), StaleFenceError);
    await rejects(t, () => execution.settle(fence, "s", T0 + 1), StaleFenceError);
    await rejects(t, () => execution.complete(fence, T0 + 1), StaleFenceError);
    await execution.dispatch(fence, T0 + 1);
    await rejects(t, () => execution.dispatch(fence, T0 + 2), StaleFenceError);
    await rejects(t, () => execution.cancelPrepared(fence, "aborted", T0 + 2), StaleFenceError);
    await execution.receive(fence, KNOWN, T0 + 2);
    await rejects(
      t,
      () => execution.receive(fence, { status: "unknown" }, T0 + 3),
      StaleFenceError,
    );
    t.expect((await execution.get(SCOPE_A, "op-1"))?.evidence).toEqual(KNOWN);
  });

  test("a fence with another token or another scope throws StaleFenceError and changes nothing", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    await rejects(
      t,
      () => execution.dispatch({ ...fence, token: fence.token + 1 }, T0 + 1),
      StaleFenceError,
    );
    await rejects(
      t,
      () => execution.dispatch({ ...fence, scope: SCOPE_B }, T0 + 1),
      StaleFenceError,
    );
    await rejects(
      t,
      () => execution.dispatch({ ...fence, operationId: "op-2" }, T0 + 1),
      StaleFenceError,
    );
    t.expect((await execution.get(SCOPE_A, "op-1"))?.state).toBe("prepared");
  });

  test("receive keeps known, unpriced and unknown evidence exactly as given", async ({
    execution,
  }) => {
    const evidences = [
      KNOWN,
      {
        status: "unpriced",
        usage: { inputTokens: 5, outputTokens: 1 },
        reason: "tier not in table",
      },
      { status: "unknown" },
    ] as const;
    for (const [i, evidence] of evidences.entries()) {
      const fence = await claimed(execution, `op-${i}`);
      await execution.dispatch(fence, T0 + 1);
      await execution.receive(fence, evidence, T0 + 2);
      t.expect((await execution.get(SCOPE_A, `op-${i}`))?.evidence).toEqual(evidence);
    }
  });

  test("receive refuses not_dispatched evidence (that ends a prepared record) and malformed usage", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    await execution.dispatch(fence, T0 + 1);
    const bad: unknown[] = [
      { status: "not_dispatched" },
      { status: "known", usage: { inputTokens: -1, outputTokens: 0 } },
      { status: "known", usage: { inputTokens: 1, outputTokens: 1, extra: 1 } },
      { status: "unpriced", usage: { inputTokens: 1, outputTokens: 1 } },
    ];
    for (const evidence of bad)
      await rejects(t, () => execution.receive(fence, unsafe(evidence), T0 + 2), ValidationError);
    t.expect((await execution.get(SCOPE_A, "op-1"))?.state).toBe("dispatching");
  });

  test("cancelPrepared records the owner's cause once and refuses expired, which only the sweep records", async ({
    execution,
  }) => {
    const fence = await claimed(execution, "op-1");
    await rejects(
      t,
      () => execution.cancelPrepared(fence, unsafe("expired"), T0 + 1),
      ValidationError,
    );
    const cancelled = await execution.cancelPrepared(fence, "input", T0 + 1);
    t.expect([cancelled.state, cancelled.notDispatchedCause]).toEqual(["not_dispatched", "input"]);
    await rejects(t, () => execution.cancelPrepared(fence, "aborted", T0 + 2), StaleFenceError);
    await rejects(t, () => execution.dispatch(fence, T0 + 2), StaleFenceError);
    t.expect((await execution.get(SCOPE_A, "op-1"))?.notDispatchedCause).toBe("input");
  });
}

function sweepTests(t: TestApi, test: Declare): void {
  test("reconcileExpired closes expired prepared records as not_dispatched (expired) and fences expired dispatching ones", async ({
    execution,
  }) => {
    const prepared = await claimed(execution, "op-prep", { deadlineAt: T0 + 100 });
    const sent = await claimed(execution, "op-sent", { deadlineAt: T0 + 100 });
    await execution.dispatch(sent, T0 + 1);
    const received = await claimed(execution, "op-recv", { deadlineAt: T0 + 100 });
    await execution.dispatch(received, T0 + 1);
    await execution.receive(received, KNOWN, T0 + 2);
    await claimed(execution, "op-live", { deadlineAt: T0 + 101 });
    t.expect(await execution.reconcileExpired({ now: T0 + 99 })).toEqual([]);
    const swept = await execution.reconcileExpired({ now: T0 + 100 });
    const byId = new Map(swept.map((r) => [r.operationId, r]));
    t.expect([...byId.keys()].sort()).toEqual(["op-prep", "op-sent"]);
    t.expect([byId.get("op-prep")?.state, byId.get("op-prep")?.notDispatchedCause]).toEqual([
      "not_dispatched",
      "expired",
    ]);
    t.expect(byId.get("op-sent")?.state).toBe("fenced");
    t.expect(byId.get("op-prep")?.fenceToken).toBe(prepared.token + 1);
    t.expect(byId.get("op-sent")?.fenceToken).toBe(sent.token + 1);
    t.expect((await execution.get(SCOPE_A, "op-recv"))?.state).toBe("received");
    t.expect((await execution.get(SCOPE_A, "op-live"))?.state).toBe("prepared");
    t.expect(await execution.reconcileExpired({ now: T0 + 100 })).toEqual([]);
  });

  test("a swept record is never sent again: old fences are stale and no fence dispatches it", async ({
    execution,
  }) => {
    const prepared = await claimed(execution, "op-prep", { deadlineAt: T0 + 10 });
    const sent = await claimed(execution, "op-sent", { deadlineAt: T0 + 10 });
    await execution.dispatch(sent, T0 + 1);
    await execution.reconcileExpired({ now: T0 + 10 });
    await rejects(t, () => execution.dispatch(prepared, T0 + 11), StaleFenceError);
    await rejects(t, () => execution.receive(sent, KNOWN, T0 + 11), StaleFenceError);
    for (const fence of [prepared, sent]) {
      await rejects(
        t,
        () => execution.dispatch({ ...fence, token: fence.token + 1 }, T0 + 11),
        StaleFenceError,
      );
    }
    const retry = await execution.claim(claimOf("op-sent", { deadlineAt: T0 + 10 }));
    t.expect(retry.status === "exists" ? retry.record.state : "claimed").toBe("fenced");
  });

  test("reconcileExpired with a scope sweeps only that scope", async ({ execution }) => {
    await claimed(execution, "op-1", { deadlineAt: T0 + 10 });
    await claimed(execution, "op-1", { scope: SCOPE_B, deadlineAt: T0 + 10 });
    const swept = await execution.reconcileExpired({ scope: SCOPE_B, now: T0 + 10 });
    t.expect(swept.map((r) => r.scope)).toEqual([SCOPE_B]);
    t.expect((await execution.get(SCOPE_A, "op-1"))?.state).toBe("prepared");
  });
}

function readTests(t: TestApi, test: Declare): void {
  test("list holds unresolved records only, ascending by (createdAt, operationId)", async ({
    execution,
  }) => {
    const done = await claimed(execution, "op-done", { createdAt: T0 - 5 });
    await execution.dispatch(done, T0);
    await execution.receive(done, KNOWN, T0);
    await execution.settle(done, "settle-1", T0);
    await execution.complete(done, T0);
    await execution.cancelPrepared(await claimed(execution, "op-cancel"), "aborted", T0);
    await claimed(execution, "op-b", { createdAt: T0 + 2 });
    await claimed(execution, "op-a", { createdAt: T0 + 2 });
    await claimed(execution, "op-z", { createdAt: T0 + 1 });
    const fenced = await claimed(execution, "op-fenced", {
      createdAt: T0 + 3,
      deadlineAt: T0 + 50,
    });
    await execution.dispatch(fenced, T0 + 4);
    await execution.reconcileExpired({ now: T0 + 50 });
    const { items } = await execution.list(SCOPE_A);
    t.expect(items.map((r) => r.operationId)).toEqual(["op-z", "op-a", "op-b", "op-fenced"]);
    t.expect((await execution.list(SCOPE_B)).items).toEqual([]);
    // With resolved: true, every record in the same order, the completed and the not dispatched included.
    const all = await execution.list(SCOPE_A, { resolved: true });
    t.expect(all.items.map((r) => r.operationId)).toEqual([
      "op-done",
      "op-cancel",
      "op-z",
      "op-a",
      "op-b",
      "op-fenced",
    ]);
    t.expect(
      (await execution.list(SCOPE_A, { resolved: false })).items.map((r) => r.operationId),
    ).toEqual(["op-z", "op-a", "op-b", "op-fenced"]);
    t.expect((await execution.list(SCOPE_B, { resolved: true })).items).toEqual([]);
    await rejects(t, () => execution.list(SCOPE_A, unsafe({ resolved: "yes" })), ValidationError);
  });

  test("get reads only the caller's scope", async ({ execution }) => {
    await claimed(execution, "op-1");
    t.expect(await execution.get(SCOPE_B, "op-1")).toBeUndefined();
    t.expect(await execution.get(SCOPE_A2, "op-1")).toBeUndefined();
    t.expect(await execution.get(SCOPE_A, "op-2")).toBeUndefined();
  });

  listingTests<ExecutionFixture>(t, test, {
    what: "execution records",
    def: 50,
    max: 100,
    seed: async (fx, n, scope) => {
      for (let i = 0; i < n; i++)
        await claimed(fx.execution, `op-${String(i).padStart(3, "0")}`, {
          scope,
          createdAt: T0 + i,
        });
    },
    list: (fx, scope, opts) => fx.execution.list(scope, opts),
    key: (item) => (item as ExecutionRecord).operationId,
  });
}

function validationTests(t: TestApi, test: Declare): void {
  test("invalid scopes, ids and claims are refused before any I/O (even on a closed store)", async ({
    execution,
  }, closeNow) => {
    await closeNow();
    const fence: Fence = { scope: SCOPE_A, operationId: "op-1", token: 1 };
    await refusesBadScopes(
      t,
      (scope) => execution.claim(claimOf("op-1", { scope })),
      (scope) => execution.dispatch({ ...fence, scope }, T0),
      (scope) => execution.get(scope, "op-1"),
      (scope) => execution.list(scope),
    );
    await refusesBadScopeFilters(t, (scope) => execution.reconcileExpired({ scope, now: T0 }));
    await refusesBadIds(
      t,
      (id) => execution.claim(claimOf(id)),
      (id) => execution.claim(claimOf("op-1", { sessionId: id })),
      (id) => execution.dispatch({ ...fence, operationId: id }, T0),
      (id) => execution.settle(fence, id, T0),
      (id) => execution.get(SCOPE_A, id),
    );
    const bad: unknown[] = [
      { kind: "chat" },
      { createdAt: -1 },
      { deadlineAt: 1.5 },
      { extra: true },
    ];
    for (const over of bad)
      await rejects(t, () => execution.claim(claimOf("op-1", unsafe(over))), ValidationError);
    await rejects(t, () => execution.dispatch({ ...fence, token: 0 }, T0), ValidationError);
    await rejects(t, () => execution.dispatch(fence, unsafe("now")), ValidationError);
  });
}
