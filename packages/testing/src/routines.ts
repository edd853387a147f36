import {
  erasedSessionMark,
  InvalidIdError,
  type Routine,
  type RoutineClaim,
  type RoutineFinish,
  RoutineRunConflictError,
  type RoutineRunStore,
  type RoutineStore,
  routineSessionId,
  type SessionErasure,
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
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";

export interface RoutineFixture extends Closable {
  readonly routines: RoutineStore;
  readonly routineRuns: RoutineRunStore;
  /** When the set has one: a session's erasure keeps its runs under the mark; a scope's removes routines and runs. */
  readonly erasure?: SessionErasure;
}

/** A nightly routine of scope A. */
export function routineOf(id: string, over: Partial<Routine> = {}): Routine {
  return {
    scope: SCOPE_A,
    id,
    goal: "Summarize today's appointments for the clinic staff.",
    intent: { tier: "balanced", sensitivity: "internal", task: "nightly-summary" },
    schedule: { cron: "0 22 * * *", timeZone: "America/Sao_Paulo" },
    cap: { usd: 0.5, onExceeded: "block" },
    destination: "staff-inbox",
    catchUp: false,
    execution: "turn",
    enabled: true,
    createdAt: T0,
    ...over,
  };
}

const SLOT = T0 + 3_600_000;

/** A claim of `SLOT` of routine `r1` by `owner`. */
export function claimOf(owner: string, over: Partial<RoutineClaim> = {}): RoutineClaim {
  return {
    scope: SCOPE_A,
    routineId: "r1",
    slot: SLOT,
    sessionId: routineSessionId("r1", SLOT),
    owner,
    at: SLOT + 5,
    ...over,
  };
}

function finishOf(owner: string, over: Partial<RoutineFinish> = {}): RoutineFinish {
  const out: Record<string, unknown> = {
    scope: SCOPE_A,
    routineId: "r1",
    slot: SLOT,
    owner,
    attempt: 1,
    at: SLOT + 60_000,
    state: "completed",
    costMicros: 1_250,
    ...over,
  };
  for (const [k, v] of Object.entries(out)) if (v === undefined) delete out[k];
  return out as unknown as RoutineFinish;
}

/** The `RoutineStore` and `RoutineRunStore` contracts: one run per slot under any concurrency, closed transitions, typed refusals, erasure. */
export function routineStoreContract(
  name: string,
  factory: Factory<RoutineFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: RoutineStore and RoutineRunStore contracts`, factory, [
    routineTests,
    claimTests,
    finishTests,
    recoveryTests,
    listingTests,
    inputTests,
    faultTests,
    erasureTests,
  ]);
}

function routineTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("put creates, updates (keeping createdAt) or leaves unchanged; get, list, scan and remove read what was put", async (fx) => {
    t.expect((await fx.routines.put(routineOf("r1"))).status).toBe("created");
    t.expect((await fx.routines.put(routineOf("r1"))).status).toBe("unchanged");
    const updated = await fx.routines.put(
      routineOf("r1", { goal: "Summarize the day.", createdAt: T0 + 99 }),
    );
    t.expect(updated.status).toBe("updated");
    t.expect(updated.routine.createdAt).toBe(T0);
    await fx.routines.put(routineOf("r0", { profile: "reader", cap: unsafe(0.25) }));
    await fx.routines.put(routineOf("r1", { scope: SCOPE_B }));
    const got = await fx.routines.get(SCOPE_A, "r0");
    t.expect(got?.cap, "a number cap blocks").toEqual({ usd: 0.25, onExceeded: "block" });
    t.expect(got?.profile).toBe("reader");
    t.expect(deepFrozen(got)).toBe(true);
    t.expect((await fx.routines.list(SCOPE_A)).items.map((r) => r.id)).toEqual(["r0", "r1"]);
    t.expect((await fx.routines.list(SCOPE_B)).items.map((r) => r.goal)).toEqual([
      routineOf("r1").goal,
    ]);
    const first = await fx.routines.scan({ limit: 2 });
    t.expect(first.items.map((r) => `${r.scope.org}:${r.id}`)).toEqual(["org-a:r0", "org-a:r1"]);
    const second = await fx.routines.scan({
      limit: 2,
      ...(first.nextCursor ? { cursor: first.nextCursor } : {}),
    });
    t.expect(second.items.map((r) => `${r.scope.org}:${r.id}`)).toEqual(["org-b:r1"]);
    t.expect(await fx.routines.remove(SCOPE_A, "r0")).toBe(true);
    t.expect(await fx.routines.remove(SCOPE_A, "r0")).toBe(false);
    t.expect(await fx.routines.get(SCOPE_A, "r0")).toBeUndefined();
  });
}

function claimTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("claim inserts running once; a second claim of the slot answers exists with the first claimer's run", async (fx) => {
    const first = await fx.routineRuns.claim(claimOf("host-1"));
    t.expect(first).toMatchObject({
      status: "claimed",
      collecting: false,
      run: { state: "running", owner: "host-1", attempt: 1, claimedAt: SLOT + 5 },
    });
    t.expect(deepFrozen(first.run)).toBe(true);
    const second = await fx.routineRuns.claim(claimOf("host-2"));
    t.expect(second).toEqual({ status: "exists", run: first.run });
    t.expect(await fx.routineRuns.get(SCOPE_A, "r1", SLOT)).toEqual(first.run);
  });

  test("sixteen concurrent claimers of one slot: exactly one is claimed; of another slot, its own one", async (fx) => {
    const { ok, failed } = await settleAll(
      Array.from({ length: 16 }, (_, i) =>
        fx.routineRuns.claim(claimOf(`host-${i}`, { slot: i % 2 === 0 ? SLOT : SLOT + 60_000 })),
      ),
    );
    t.expect(failed).toEqual([]);
    const claimed = ok.filter((r) => r.status === "claimed");
    t.expect(claimed.map((r) => r.run.slot).sort()).toEqual([SLOT, SLOT + 60_000]);
    for (const r of ok)
      t.expect(r.run.owner).toBe(claimed.find((c) => c.run.slot === r.run.slot)?.run.owner);
  });

  test("a missed slot is recorded once and is never claimed afterwards; a claimed slot is never recorded missed", async (fx) => {
    const missed = await fx.routineRuns.recordMissed({
      scope: SCOPE_A,
      routineId: "r1",
      slot: SLOT,
      sessionId: routineSessionId("r1", SLOT),
      at: SLOT + 10,
    });
    t.expect(missed).toMatchObject({
      status: "claimed",
      run: { state: "missed", reason: "missed" },
    });
    t.expect((await fx.routineRuns.claim(claimOf("host-1"))).status).toBe("exists");
    await fx.routineRuns.claim(claimOf("host-1", { slot: SLOT + 1 }));
    const late = await fx.routineRuns.recordMissed({
      scope: SCOPE_A,
      routineId: "r1",
      slot: SLOT + 1,
      sessionId: "x",
      at: SLOT + 10,
    });
    t.expect(late.status).toBe("exists");
    t.expect(late.run.state).toBe("running");
  });

  test("a submitted run is taken for collection by exactly one of concurrent claimers, with its job kept", async (fx) => {
    await fx.routineRuns.claim(claimOf("host-1"));
    const submission = { jobId: "batch-77", submittedAt: SLOT + 30 };
    const submitted = await fx.routineRuns.finish(
      finishOf("host-1", { state: "submitted", submission, costMicros: undefined }),
    );
    t.expect(submitted).toMatchObject({ state: "submitted", submission });
    const { ok } = await settleAll(
      Array.from({ length: 8 }, (_, i) =>
        fx.routineRuns.claim(claimOf(`collector-${i}`, { at: SLOT + 90_000 })),
      ),
    );
    const collected = ok.filter((r) => r.status === "claimed");
    t.expect(collected).toHaveLength(1);
    t.expect(collected[0]).toMatchObject({
      collecting: true,
      run: { state: "running", submission, claimedAt: SLOT + 90_000 },
    });
    // Still pending at the provider: back to submitted under the collector, the job kept.
    const owner = collected[0]?.run.owner ?? "";
    const back = await fx.routineRuns.finish(
      finishOf(owner, { state: "submitted", costMicros: undefined, at: SLOT + 90_001 }),
    );
    t.expect(back.submission).toEqual(submission);
  });
}

function finishTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("finish ends the claimer's running run; capsCrossed and delivery kept; empty arrays stored absent", async (fx) => {
    await fx.routineRuns.claim(claimOf("host-1"));
    const delivery = {
      destination: "staff-inbox",
      status: "delivered" as const,
      at: SLOT + 60_000,
      capsCrossed: ["perTenantDayUsd" as const],
    };
    const done = await fx.routineRuns.finish(
      finishOf("host-1", { turnId: "turn-1", capsCrossed: ["perTenantDayUsd"], delivery }),
    );
    t.expect(done).toMatchObject({
      state: "completed",
      turnId: "turn-1",
      costMicros: 1_250,
      capsCrossed: ["perTenantDayUsd"],
      delivery,
    });
    await fx.routineRuns.claim(claimOf("host-1", { slot: SLOT + 1 }));
    const empty = await fx.routineRuns.finish(
      finishOf("host-1", {
        slot: SLOT + 1,
        capsCrossed: [],
        delivery: { ...delivery, capsCrossed: [] },
      }),
    );
    const stored = await fx.routineRuns.get(SCOPE_A, "r1", SLOT + 1);
    for (const run of [empty, stored]) {
      t.expect(run !== undefined && "capsCrossed" in run, "an empty capsCrossed is absent").toBe(
        false,
      );
      t.expect(
        run?.delivery !== undefined && "capsCrossed" in run.delivery,
        "an empty delivery capsCrossed is absent",
      ).toBe(false);
    }
  });

  test("the same finish again replays; another end, another owner or an unclaimed slot conflicts", async (fx) => {
    await fx.routineRuns.claim(claimOf("host-1"));
    const done = await fx.routineRuns.finish(finishOf("host-1"));
    t.expect(await fx.routineRuns.finish(finishOf("host-1"))).toEqual(done);
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("host-1", { state: "failed", reason: "no_reply" })),
      RoutineRunConflictError,
      "store_conflict",
    );
    await fx.routineRuns.claim(claimOf("host-1", { slot: SLOT + 1 }));
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("host-2", { slot: SLOT + 1 })),
      RoutineRunConflictError,
    );
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("host-1", { slot: SLOT + 1, attempt: 2 })),
      RoutineRunConflictError,
    );
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("host-1", { slot: SLOT + 2 })),
      RoutineRunConflictError,
    );
    t.expect((await fx.routineRuns.get(SCOPE_A, "r1", SLOT + 1))?.state).toBe("running");
  });
}

function recoveryTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("an interrupted claim becomes reconciliation_required, is never claimed again, and only an operator resolves it", async (fx) => {
    await fx.routineRuns.claim(claimOf("host-1"));
    await fx.routineRuns.claim(claimOf("host-1", { slot: SLOT + 1, at: SLOT + 1_000 }));
    t.expect(
      await fx.routineRuns.reconcileInterrupted({ claimedBefore: SLOT + 5, at: SLOT + 2_000 }),
      "a claim at the bound is not stale",
    ).toEqual([]);
    const stale = await fx.routineRuns.reconcileInterrupted({
      claimedBefore: SLOT + 6,
      at: SLOT + 2_000,
    });
    t.expect(stale.map((r) => [r.slot, r.state, r.reason])).toEqual([
      [SLOT, "reconciliation_required", "interrupted"],
    ]);
    t.expect(
      await fx.routineRuns.reconcileInterrupted({ claimedBefore: SLOT + 6, at: SLOT + 3_000 }),
    ).toEqual([]);
    t.expect(
      (await fx.routineRuns.claim(claimOf("host-2"))).status,
      "never re-run by a claim",
    ).toBe("exists");
    await rejects(t, () => fx.routineRuns.finish(finishOf("host-1")), RoutineRunConflictError);
    const rerun = await fx.routineRuns.resolve({
      scope: SCOPE_A,
      routineId: "r1",
      slot: SLOT,
      action: "rerun",
      owner: "operator-1",
      at: SLOT + 4_000,
    });
    t.expect(rerun).toMatchObject({
      state: "running",
      attempt: 2,
      owner: "operator-1",
      claimedAt: SLOT + 4_000,
    });
    t.expect("reason" in rerun).toBe(false);
    const done = await fx.routineRuns.finish(finishOf("operator-1", { attempt: 2 }));
    t.expect(done.state).toBe("completed");
    await rejects(
      t,
      () =>
        fx.routineRuns.resolve({
          scope: SCOPE_A,
          routineId: "r1",
          slot: SLOT,
          action: "abandon",
          at: SLOT + 5_000,
        }),
      RoutineRunConflictError,
    );
  });

  test("abandon and confirm_completed close a run for good; a resolution of a slot never recorded conflicts", async (fx) => {
    for (const slot of [SLOT, SLOT + 1]) {
      await fx.routineRuns.claim(claimOf("host-1", { slot }));
      await fx.routineRuns.finish(
        finishOf("host-1", { slot, state: "reconciliation_required", reason: "turn_uncertain" }),
      );
    }
    const abandoned = await fx.routineRuns.resolve({
      scope: SCOPE_A,
      routineId: "r1",
      slot: SLOT,
      action: "abandon",
      at: SLOT + 9,
    });
    t.expect(abandoned).toMatchObject({ state: "failed", reason: "operator_abandoned" });
    await rejects(
      t,
      () =>
        fx.routineRuns.resolve({
          scope: SCOPE_A,
          routineId: "r1",
          slot: SLOT,
          action: "rerun",
          owner: "o",
          at: SLOT + 9,
        }),
      RoutineRunConflictError,
    );
    const confirmed = await fx.routineRuns.resolve({
      scope: SCOPE_A,
      routineId: "r1",
      slot: SLOT + 1,
      action: "confirm_completed",
      at: SLOT + 9,
    });
    t.expect(confirmed).toMatchObject({ state: "completed", reason: "operator_completed" });
    await rejects(
      t,
      () =>
        fx.routineRuns.resolve({
          scope: SCOPE_A,
          routineId: "r1",
          slot: SLOT + 1,
          action: "rerun",
          owner: "o",
          at: SLOT + 10,
        }),
      RoutineRunConflictError,
    );
    await rejects(
      t,
      () =>
        fx.routineRuns.resolve({
          scope: SCOPE_A,
          routineId: "r1",
          slot: SLOT + 7,
          action: "abandon",
          at: SLOT + 10,
        }),
      RoutineRunConflictError,
    );
    await rejects(
      t,
      () =>
        fx.routineRuns.resolve(
          unsafe({ scope: SCOPE_A, routineId: "r1", slot: SLOT, action: "rerun", at: SLOT + 10 }),
        ),
      ValidationError,
    );
  });
}

function listingTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("list is one scope's, newest slot first, a cursor at a time, filtered by routine and state; latest reads the newest slot", async (fx) => {
    for (const [i, id] of ["r1", "r2", "r1", "r2", "r1"].entries())
      await fx.routineRuns.claim(
        claimOf("h", { routineId: id, slot: SLOT + i * 1000, sessionId: `s-${i}` }),
      );
    await fx.routineRuns.finish(finishOf("h", { slot: SLOT }));
    await fx.routineRuns.claim(claimOf("h", { scope: SCOPE_B }));
    const slots: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await fx.routineRuns.list(SCOPE_A, { limit: 2, ...(cursor ? { cursor } : {}) });
      slots.push(...page.items.map((r) => r.slot - SLOT));
      cursor = page.nextCursor;
    } while (cursor);
    t.expect(slots).toEqual([4000, 3000, 2000, 1000, 0]);
    t.expect(
      (await fx.routineRuns.list(SCOPE_A, { routineId: "r2" })).items.map((r) => r.slot - SLOT),
    ).toEqual([3000, 1000]);
    t.expect(
      (await fx.routineRuns.list(SCOPE_A, { state: "completed" })).items.map((r) => r.slot - SLOT),
    ).toEqual([0]);
    t.expect((await fx.routineRuns.latest(SCOPE_A, "r1"))?.slot).toBe(SLOT + 4000);
    t.expect(await fx.routineRuns.latest(SCOPE_A, "r9")).toBeUndefined();
    t.expect((await fx.routineRuns.list(SCOPE_B)).items).toHaveLength(1);
    for (const limit of [0, 101])
      await rejects(t, () => fx.routineRuns.list(SCOPE_A, { limit }), ValidationError);
    await rejects(t, () => fx.routineRuns.list(SCOPE_A, { cursor: "forged" }), ValidationError);
    await rejects(
      t,
      () => fx.routineRuns.list(SCOPE_A, unsafe({ state: "paused" })),
      ValidationError,
    );
  });
}

function inputTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("hostile routine data is refused typed before any I/O (even on a closed store): bad time zone, cron text, oversize goal, unknown field, accessor", async (fx, closeNow) => {
    t.expect(
      (await fx.routines.put(routineOf("g", { goal: "g".repeat(8000) }))).status,
      "a goal of 8,000 characters is kept",
    ).toBe("created");
    t.expect(
      (await fx.routines.put(routineOf("x".repeat(100)))).status,
      "an id of 100 characters is kept",
    ).toBe("created");
    await closeNow();
    let read = false;
    const getter = Object.defineProperty({ ...routineOf("r1") }, "goal", {
      enumerable: true,
      get: () => {
        read = true;
        return "x";
      },
    });
    const bad: unknown[] = [
      null,
      getter,
      { ...routineOf("r1"), code: "process.exit()" },
      routineOf("r1", { goal: "g".repeat(8001) }),
      routineOf("r1", { goal: "   " }),
      routineOf("r1", { goal: "bell \u0007" }),
      routineOf("r1", { schedule: { cron: "0 22 * * *", timeZone: "Mars/Olympus" } }),
      routineOf("r1", { schedule: { cron: "0 22 * * *", timeZone: "" } }),
      routineOf("r1", { schedule: { cron: "0 22 * * *\n", timeZone: "UTC" } }),
      routineOf("r1", { schedule: { cron: "*".repeat(121), timeZone: "UTC" } }),
      routineOf("r1", { schedule: unsafe({ cron: "0 22 * * *", timeZone: "UTC", every: 1 }) }),
      routineOf("r1", { cap: unsafe(-1) }),
      routineOf("r1", { cap: unsafe({ usd: 1, onExceeded: "ignore" }) }),
      routineOf("r1", { intent: unsafe({ tier: "gold", sensitivity: "internal" }) }),
      routineOf("r1", { execution: unsafe("shell") }),
      routineOf("r1", { catchUp: unsafe("yes") }),
      routineOf("r1", { createdAt: -1 }),
    ];
    for (const value of bad)
      await rejects(t, () => fx.routines.put(unsafe(value)), ValidationError);
    await rejects(t, () => fx.routines.put(routineOf("x".repeat(101))), ValidationError);
    t.expect(read, "no getter ran").toBe(false);
    await refusesBadScopes(
      t,
      (scope) => fx.routines.put(routineOf("r1", { scope })),
      (scope) => fx.routineRuns.claim(claimOf("h", { scope })),
      (scope) => fx.routineRuns.list(scope),
    );
    await refusesBadIds(
      t,
      (id) => fx.routineRuns.claim(claimOf(id)),
      (id) => fx.routineRuns.claim(claimOf("h", { routineId: id })),
      (id) => fx.routineRuns.get(SCOPE_A, id, SLOT),
    );
    for (const slot of [-1, 1.5, Number.NaN])
      await rejects(t, () => fx.routineRuns.claim(claimOf("h", { slot })), ValidationError);
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("h", { capsCrossed: unsafe(["perYearUsd"]) })),
      ValidationError,
    );
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("h", { reason: unsafe("because") })),
      ValidationError,
    );
    await rejects(
      t,
      () => fx.routineRuns.finish(finishOf("h", { state: unsafe("running") })),
      ValidationError,
    );
    await rejects(t, () => fx.routines.get(SCOPE_A, "has space"), InvalidIdError);
  });
}

function faultTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("executed, then reported a failure: the claim stands (a retry answers exists, never a second run); the finish replays", async (fx) => {
    const after = new StoreFaults({ seed: 3, rate: 1, afterShare: 1 }).wrap(
      "routineRuns",
      fx.routineRuns,
    );
    await rejects(t, () => after.claim(claimOf("host-1")), Error, "store_unavailable");
    const retry = await fx.routineRuns.claim(claimOf("host-1"));
    t.expect(retry.status, "the lost acknowledgement's claim is the slot's run").toBe("exists");
    t.expect(retry.run.owner).toBe("host-1");
    await rejects(t, () => after.finish(finishOf("host-1")), Error, "store_unavailable");
    t.expect((await fx.routineRuns.finish(finishOf("host-1"))).state).toBe("completed");
    const before = new StoreFaults({ seed: 3, rate: 1, afterShare: 0 }).wrap(
      "routineRuns",
      fx.routineRuns,
    );
    await rejects(
      t,
      () => before.claim(claimOf("host-1", { slot: SLOT + 1 })),
      Error,
      "store_unavailable",
    );
    t.expect(
      await fx.routineRuns.get(SCOPE_A, "r1", SLOT + 1),
      "a fault before the call wrote nothing",
    ).toBeUndefined();
  });
}

function erasureTests(t: TestApi, test: FixtureTest<RoutineFixture>): void {
  test("erasing a run's session keeps the run under the session's mark; erasing the scope removes its routines and runs", async (fx) => {
    if (!fx.erasure) return;
    await fx.routines.put(routineOf("r1"));
    await fx.routines.put(routineOf("r1", { scope: SCOPE_B }));
    const sessionId = routineSessionId("r1", SLOT);
    await fx.routineRuns.claim(claimOf("h"));
    await fx.routineRuns.claim(claimOf("h", { slot: SLOT + 1, sessionId: "other" }));
    await fx.routineRuns.claim(claimOf("h", { scope: SCOPE_B }));
    await fx.erasure.eraseSession(SCOPE_A, sessionId, { auditSessionId: "pseudo" });
    t.expect((await fx.routineRuns.get(SCOPE_A, "r1", SLOT))?.sessionId).toBe(
      erasedSessionMark(SCOPE_A, sessionId),
    );
    t.expect((await fx.routineRuns.get(SCOPE_A, "r1", SLOT + 1))?.sessionId).toBe("other");
    await fx.erasure.eraseScope(SCOPE_A);
    t.expect((await fx.routines.list(SCOPE_A)).items).toEqual([]);
    t.expect((await fx.routineRuns.list(SCOPE_A)).items).toEqual([]);
    t.expect((await fx.routines.list(SCOPE_B)).items).toHaveLength(1);
    t.expect((await fx.routineRuns.list(SCOPE_B)).items.map((r) => r.sessionId)).toEqual([
      sessionId,
    ]);
  });
}
