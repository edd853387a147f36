import {
  type Admission,
  type AdmissionKind,
  type AdmissionStore,
  ConflictError,
  type Scope,
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

export interface AdmissionFixture extends Closable {
  readonly admissions: AdmissionStore;
}

interface AdmitArgs {
  scope?: Scope;
  sessionId?: string;
  admissionId: string;
  kind?: AdmissionKind;
  now?: number;
  deadlineAt?: number;
}

/** Admit with sensible defaults: scope A, session s1, a turn, deadline one minute out. */
export function admitWith(store: AdmissionStore, a: AdmitArgs) {
  return store.admit({
    // `in`, not `??`: a test passes undefined or null on purpose to see it refused.
    scope: "scope" in a ? unsafe<Scope>(a.scope) : SCOPE_A,
    sessionId: "sessionId" in a ? unsafe<string>(a.sessionId) : "s1",
    rootKey: `root-${a.admissionId}`,
    kind: a.kind ?? "turn",
    admissionId: a.admissionId,
    now: a.now ?? T0,
    deadlineAt: a.deadlineAt ?? T0 + 60_000,
  });
}

async function admitted(store: AdmissionStore, a: AdmitArgs): Promise<Admission> {
  const result = await admitWith(store, a);
  if (result.status !== "admitted")
    throw new Error(`expected ${a.admissionId} to be admitted, got busy`);
  return result.admission;
}

/** The `AdmissionStore` contract: one turn or event batch per session at a time. */
export function admissionStoreContract(
  name: string,
  factory: Factory<AdmissionFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: AdmissionStore contract`, factory, [
    admitTests,
    transitionTests,
    expiryTests,
    isolationTests,
  ]);
}

type Declare = FixtureTest<AdmissionFixture>;

function admitTests(t: TestApi, test: Declare): void {
  test("admits a free session as active, with the given deadline and kind", async ({
    admissions,
  }) => {
    const result = await admitWith(admissions, {
      admissionId: "a1",
      kind: "events",
      deadlineAt: T0 + 5_000,
    });
    t.expect(result.status).toBe("admitted");
    if (result.status !== "admitted") return;
    t.expect(result.admission).toEqual({
      admissionId: "a1",
      scope: SCOPE_A,
      sessionId: "s1",
      rootKey: "root-a1",
      kind: "events",
      state: "active",
      createdAt: T0,
      deadlineAt: T0 + 5_000,
    });
    t.expect(deepFrozen(result.admission)).toBe(true);
    t.expect(await admissions.get(SCOPE_A, "a1")).toEqual(result.admission);
  });

  test("answers busy with the holder while the holder is active or uncertain", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    const busy = await admitWith(admissions, { admissionId: "a2" });
    t.expect(busy.status).toBe("busy");
    if (busy.status === "busy") t.expect(busy.holder.admissionId).toBe("a1");
    await admissions.markUncertain(SCOPE_A, "a1");
    const still = await admitWith(admissions, { admissionId: "a3" });
    t.expect(still.status === "busy" ? still.holder.state : "admitted").toBe("uncertain");
    t.expect(await admissions.get(SCOPE_A, "a2")).toBeUndefined();
  });

  test("frees the session when the holder finishes or is released", async ({ admissions }) => {
    await admitted(admissions, { admissionId: "a1" });
    await admissions.finish(SCOPE_A, "a1");
    await admitted(admissions, { admissionId: "a2" });
    await admissions.releaseFailed(SCOPE_A, "a2");
    t.expect((await admitWith(admissions, { admissionId: "a3" })).status).toBe("admitted");
  });

  test("admits exactly one of many concurrent admits on one session", async ({ admissions }) => {
    const ids = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const { ok } = await settleAll(ids.map((id) => admitWith(admissions, { admissionId: id })));
    t.expect(ok).toHaveLength(ids.length);
    const winners = ok.filter((r) => r.status === "admitted");
    t.expect(winners).toHaveLength(1);
    const winner = winners[0]?.status === "admitted" ? winners[0].admission.admissionId : "none";
    for (const r of ok) if (r.status === "busy") t.expect(r.holder.admissionId).toBe(winner);
    t.expect((await admissions.holder(SCOPE_A, "s1"))?.admissionId).toBe(winner);
  });

  test("holds sessions independently, and a session id under another scope is another session", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    await admitted(admissions, { admissionId: "a2", sessionId: "s2" });
    await admitted(admissions, { admissionId: "a3", scope: SCOPE_A2 });
    await admitted(admissions, { admissionId: "a1", scope: SCOPE_B });
    t.expect((await admissions.holder(SCOPE_B, "s1"))?.rootKey).toBe("root-a1");
  });

  test("refuses an admission id already used in the scope (never two owners of one fence)", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    await admissions.finish(SCOPE_A, "a1");
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1" }),
      ConflictError,
      "admission_exists",
    );
    t.expect((await admissions.get(SCOPE_A, "a1"))?.state).toBe("finished");
  });
}

function transitionTests(t: TestApi, test: Declare): void {
  test("markUncertain moves active to uncertain and returns the record after the call", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    const marked = await admissions.markUncertain(SCOPE_A, "a1");
    t.expect(marked?.state).toBe("uncertain");
    t.expect(await admissions.get(SCOPE_A, "a1")).toEqual(marked);
    t.expect((await admissions.holder(SCOPE_A, "s1"))?.state).toBe("uncertain");
  });

  test("finish moves active to finished and frees the session", async ({ admissions }) => {
    await admitted(admissions, { admissionId: "a1" });
    const done = await admissions.finish(SCOPE_A, "a1");
    t.expect(done?.state).toBe("finished");
    t.expect(done?.releaseReason).toBeUndefined();
    t.expect(await admissions.holder(SCOPE_A, "s1")).toBeUndefined();
  });

  test("releaseFailed releases an active or an uncertain admission with reason failed", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    const first = await admissions.releaseFailed(SCOPE_A, "a1");
    t.expect([first?.state, first?.releaseReason]).toEqual(["released", "failed"]);
    await admitted(admissions, { admissionId: "a2" });
    await admissions.markUncertain(SCOPE_A, "a2");
    const second = await admissions.releaseFailed(SCOPE_A, "a2");
    t.expect([second?.state, second?.releaseReason]).toEqual(["released", "failed"]);
    t.expect(await admissions.holder(SCOPE_A, "s1")).toBeUndefined();
  });

  test("a transition from another state is a no-op returning the current record (a lost ack reads back)", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    await admissions.markUncertain(SCOPE_A, "a1");
    t.expect((await admissions.finish(SCOPE_A, "a1"))?.state).toBe("uncertain");
    t.expect((await admissions.markUncertain(SCOPE_A, "a1"))?.state).toBe("uncertain");
    await admissions.releaseFailed(SCOPE_A, "a1");
    for (const call of [admissions.finish, admissions.markUncertain, admissions.releaseFailed]) {
      const after = await call.call(admissions, SCOPE_A, "a1");
      t.expect([after?.state, after?.releaseReason]).toEqual(["released", "failed"]);
    }
    await admitted(admissions, { admissionId: "a2" });
    await admissions.finish(SCOPE_A, "a2");
    t.expect((await admissions.releaseFailed(SCOPE_A, "a2"))?.state).toBe("finished");
    t.expect((await admissions.finish(SCOPE_A, "a2"))?.state).toBe("finished");
  });

  test("a transition of an unknown admission returns undefined", async ({ admissions }) => {
    t.expect(await admissions.markUncertain(SCOPE_A, "nope")).toBeUndefined();
    t.expect(await admissions.finish(SCOPE_A, "nope")).toBeUndefined();
    t.expect(await admissions.releaseFailed(SCOPE_A, "nope")).toBeUndefined();
    t.expect(await admissions.get(SCOPE_A, "nope")).toBeUndefined();
    t.expect(await admissions.holder(SCOPE_A, "s1")).toBeUndefined();
  });
}

function expiryTests(t: TestApi, test: Declare): void {
  test("releaseExpired releases active and uncertain admissions whose deadline plus grace is at or before now", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "due", deadlineAt: T0 + 1_000 });
    await admitted(admissions, { admissionId: "due-unc", sessionId: "s2", deadlineAt: T0 + 1_000 });
    await admissions.markUncertain(SCOPE_A, "due-unc");
    await admitted(admissions, { admissionId: "later", sessionId: "s3", deadlineAt: T0 + 1_001 });
    await admitted(admissions, { admissionId: "done", sessionId: "s4", deadlineAt: T0 + 10 });
    await admissions.finish(SCOPE_A, "done");
    t.expect(await admissions.releaseExpired({ now: T0 + 1_499, graceMs: 500 })).toEqual([]);
    const released = await admissions.releaseExpired({ now: T0 + 1_500, graceMs: 500 });
    t.expect(released.map((a) => [a.admissionId, a.state, a.releaseReason]).sort()).toEqual([
      ["due", "released", "expired"],
      ["due-unc", "released", "expired"],
    ]);
    t.expect((await admissions.get(SCOPE_A, "later"))?.state).toBe("active");
    t.expect((await admissions.get(SCOPE_A, "done"))?.state).toBe("finished");
    t.expect(await admissions.holder(SCOPE_A, "s1")).toBeUndefined();
    t.expect(await admissions.releaseExpired({ now: T0 + 1_500, graceMs: 500 })).toEqual([]);
  });

  test("releaseExpired with a scope releases only that scope; without one, every scope", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a", deadlineAt: T0 + 10 });
    await admitted(admissions, { admissionId: "b", scope: SCOPE_B, deadlineAt: T0 + 10 });
    await admitted(admissions, { admissionId: "c", scope: SCOPE_A2, deadlineAt: T0 + 10 });
    const onlyB = await admissions.releaseExpired({ scope: SCOPE_B, now: T0 + 10, graceMs: 0 });
    t.expect(onlyB.map((a) => a.admissionId)).toEqual(["b"]);
    t.expect((await admissions.get(SCOPE_A, "a"))?.state).toBe("active");
    const rest = await admissions.releaseExpired({ now: T0 + 10, graceMs: 0 });
    t.expect(rest.map((a) => a.admissionId).sort()).toEqual(["a", "c"]);
  });

  test("an expired admission still holds its session until it is released", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1", deadlineAt: T0 + 10 });
    const busy = await admitWith(admissions, {
      admissionId: "a2",
      now: T0 + 50_000,
      deadlineAt: T0 + 90_000,
    });
    t.expect(busy.status).toBe("busy");
  });
}

function isolationTests(t: TestApi, test: Declare): void {
  test("scope isolation: another scope reads and moves nothing, whatever ids it passes", async ({
    admissions,
  }) => {
    await admitted(admissions, { admissionId: "a1" });
    for (const other of [SCOPE_A2, SCOPE_B]) {
      t.expect(await admissions.get(other, "a1")).toBeUndefined();
      t.expect(await admissions.holder(other, "s1")).toBeUndefined();
      t.expect(await admissions.markUncertain(other, "a1")).toBeUndefined();
      t.expect(await admissions.finish(other, "a1")).toBeUndefined();
      t.expect(await admissions.releaseFailed(other, "a1")).toBeUndefined();
    }
    t.expect((await admissions.get(SCOPE_A, "a1"))?.state).toBe("active");
  });

  test("the stored record is detached from the caller's input", async ({ admissions }) => {
    const scope = { org: "org-a", uid: "user-1" };
    await admissions.admit({
      scope,
      sessionId: "s1",
      rootKey: "r",
      kind: "turn",
      admissionId: "a1",
      now: T0,
      deadlineAt: T0 + 1,
    });
    scope.uid = "user-9";
    t.expect((await admissions.get(SCOPE_A, "a1"))?.scope).toEqual(SCOPE_A);
  });

  test("invalid scopes, ids and inputs are refused before any I/O (even on a closed store)", async ({
    admissions,
  }, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => admitWith(admissions, { scope, admissionId: "a1" }),
      (scope) => admissions.get(scope, "a1"),
    );
    await refusesBadScopeFilters(t, (scope) =>
      admissions.releaseExpired({ scope, now: T0, graceMs: 0 }),
    );
    await refusesBadIds(
      t,
      (id) => admitWith(admissions, { admissionId: id }),
      (id) => admitWith(admissions, { sessionId: id, admissionId: "a1" }),
      (id) => admissions.holder(SCOPE_A, id),
      (id) => admissions.markUncertain(SCOPE_A, id),
      (id) => admissions.finish(SCOPE_A, id),
      (id) => admissions.releaseFailed(SCOPE_A, id),
    );
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1", kind: unsafe("meeting") }),
      ValidationError,
    );
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1", deadlineAt: T0 }),
      ValidationError,
    );
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1", now: unsafe(1.5) }),
      ValidationError,
    );
    await rejects(t, () => admissions.releaseExpired({ now: T0, graceMs: -1 }), ValidationError);
  });
}
