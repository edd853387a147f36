import {
  type AdmissionStore,
  FenceError,
  InvalidScopeError,
  type Scope,
  ScopeFencedError,
  type ScopeFenceTarget,
  ValidationError,
} from "@alma-harness/core";
import { admitWith } from "./admissions.js";
import { claimOf } from "./execution.js";
import {
  contractSuite,
  type Factory,
  type FixtureTest,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  T0,
  type TestApi,
  unsafe,
  userMsg,
} from "./harness.js";
import { reservationOf } from "./results.js";
import type { StoreSet } from "./index.js";

const GRACE = 15 * 60_000;

/**
 * The scope fence and the narrowed expiry sweep (spec: scope-fence; expired event admissions), for
 * every store set: a fence is durable per target (the whole org, or one org+uid), refuses a new
 * admission after the session's occupancy is checked, and refuses every write fenced on an
 * admission of a covered scope inside the write's own transaction; transitions still run.
 */
export function scopeFenceContract(name: string, factory: Factory<StoreSet>, t: TestApi): void {
  contractSuite(t, `${name}: scope fence contract`, factory, [
    fenceRecordTests,
    fenceAdmitTests,
    fenceWriteTests,
    fenceDispatchTests,
    expiryFilterTests,
  ]);
}

type Declare = FixtureTest<StoreSet>;

const fence = (
  admissions: AdmissionStore,
  target: ScopeFenceTarget,
  reason: "suspended" | "erasure" | "operator" = "suspended",
  now = T0,
) => admissions.fenceScope({ target, reason, now });

function fenceRecordTests(t: TestApi, test: Declare): void {
  test("a fence is recorded per target; a second fence keeps the first; lift removes exactly that target", async ({
    admissions,
  }) => {
    t.expect(await fence(admissions, { org: "org-a" })).toEqual({
      org: "org-a",
      reason: "suspended",
      fencedAt: T0,
    });
    t.expect(await fence(admissions, { org: "org-a" }, "erasure", T0 + 5)).toEqual({
      org: "org-a",
      reason: "suspended",
      fencedAt: T0,
    });
    t.expect(await fence(admissions, { org: "org-a", uid: "user-2" }, "erasure", T0 + 1)).toEqual({
      org: "org-a",
      uid: "user-2",
      reason: "erasure",
      fencedAt: T0 + 1,
    });
    t.expect((await admissions.scopeFences({ org: "org-a" })).map((f) => f.uid ?? "*")).toEqual([
      "*",
      "user-2",
    ]);
    t.expect((await admissions.scopeFences(SCOPE_A)).map((f) => f.uid ?? "*")).toEqual(["*"]);
    t.expect((await admissions.scopeFences(SCOPE_A2)).map((f) => f.uid ?? "*")).toEqual([
      "*",
      "user-2",
    ]);
    t.expect(await admissions.scopeFences({ org: "org-b" })).toEqual([]);
    t.expect(await admissions.liftScopeFence({ org: "org-a" })).toBe(true);
    t.expect(await admissions.liftScopeFence({ org: "org-a" })).toBe(false);
    t.expect(await admissions.scopeFences(SCOPE_A)).toEqual([]);
    t.expect((await admissions.scopeFences(SCOPE_A2)).map((f) => f.uid)).toEqual(["user-2"]);
  });

  test("hostile targets and reasons are refused with a typed error before any write", async ({
    admissions,
  }) => {
    const getter = Object.defineProperty({}, "org", { get: () => "org-a", enumerable: true });
    for (const target of [
      null,
      "org-a",
      [],
      {},
      { org: "org a" },
      { org: ".x" },
      { org: "org-a", uid: "" },
      { org: "org-a", uid: "*" },
      { org: "org-a", extra: 1 },
      getter,
      { org: "a/b" },
    ]) {
      await rejects(
        t,
        () => admissions.fenceScope({ target: unsafe(target), reason: "suspended", now: T0 }),
        InvalidScopeError,
      );
      await rejects(t, () => admissions.liftScopeFence(unsafe(target)), InvalidScopeError);
      await rejects(t, () => admissions.scopeFences(unsafe(target)), InvalidScopeError);
    }
    await rejects(
      t,
      () => admissions.fenceScope({ target: { org: "org-a" }, reason: unsafe("because"), now: T0 }),
      ValidationError,
    );
    await rejects(
      t,
      () =>
        admissions.fenceScope(
          unsafe({ target: { org: "org-a" }, reason: "suspended", now: T0, extra: 1 }),
        ),
      InvalidScopeError,
    );
    t.expect(await admissions.scopeFences({ org: "org-a" })).toEqual([]);
  });
}

function fenceAdmitTests(t: TestApi, test: Declare): void {
  test("a fenced scope admits nothing; the org's fence covers every uid; other tenants are untouched", async ({
    admissions,
  }) => {
    await fence(admissions, { org: "org-a" });
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1" }),
      ScopeFencedError,
      "scope_fenced",
    );
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a2", scope: SCOPE_A2, kind: "events" }),
      ScopeFencedError,
    );
    t.expect(await admissions.holder(SCOPE_A, "s1")).toBeUndefined();
    t.expect(await admissions.get(SCOPE_A, "a1")).toBeUndefined();
    t.expect((await admitWith(admissions, { admissionId: "b1", scope: SCOPE_B })).status).toBe(
      "admitted",
    );
    await admissions.liftScopeFence({ org: "org-a" });
    t.expect((await admitWith(admissions, { admissionId: "a3" })).status).toBe("admitted");
  });

  test("a uid fence covers that scope only", async ({ admissions }) => {
    await fence(admissions, SCOPE_A2);
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a1", scope: SCOPE_A2 }),
      ScopeFencedError,
    );
    t.expect((await admitWith(admissions, { admissionId: "a2" })).status).toBe("admitted");
  });

  test("a session still held answers busy under a fence (occupancy is checked before the refusal)", async ({
    admissions,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    await fence(admissions, { org: "org-a" });
    const result = await admitWith(admissions, { admissionId: "a2" });
    t.expect(result.status).toBe("busy");
    await rejects(
      t,
      () => admitWith(admissions, { admissionId: "a3", sessionId: "s2" }),
      ScopeFencedError,
    );
  });
}

function fenceWriteTests(t: TestApi, test: Declare): void {
  test("an admission taken before the fence writes nothing more: append, claim and final put are refused", async ({
    admissions,
    sessions,
    execution,
    rootResults,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    await rootResults.reserve(reservationOf("root-a1"));
    await fence(admissions, SCOPE_A);
    await rejects(
      t,
      () => sessions.append(SCOPE_A, "s1", [userMsg("hi")], { admissionId: "a1", now: T0 + 1 }),
      ScopeFencedError,
      "scope_fenced",
    );
    await rejects(
      t,
      () => execution.claim(claimOf("op-1"), { admissionId: "a1" }),
      ScopeFencedError,
    );
    await rejects(
      t,
      () => rootResults.put(SCOPE_A, "root-a1", { ok: true }, T0 + 1, { admissionId: "a1" }),
      ScopeFencedError,
    );
    t.expect((await sessions.load(SCOPE_A, "s1")).revision).toBe(0);
    t.expect(await execution.get(SCOPE_A, "op-1")).toBeUndefined();
    t.expect((await rootResults.get(SCOPE_A, "root-a1", T0 + 1))?.state).toBe("reserved");
    // A ScopeFencedError is a FenceError: a host that handles a stale admission handles it too.
    t.expect(new ScopeFencedError()).toBeInstanceOf(FenceError);
    // Transitions are never fenced: the turn can be marked and released.
    t.expect((await admissions.markUncertain(SCOPE_A, "a1"))?.state).toBe("uncertain");
    t.expect((await admissions.releaseFailed(SCOPE_A, "a1"))?.state).toBe("released");
  });

  test("after the lift an admission still active writes again; the fence on another scope does not reach it", async ({
    admissions,
    sessions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    await fence(admissions, SCOPE_A2);
    t.expect((await execution.claim(claimOf("op-1"), { admissionId: "a1" })).status).toBe(
      "claimed",
    );
    await fence(admissions, { org: "org-a" });
    await rejects(
      t,
      () => sessions.append(SCOPE_A, "s1", [userMsg("hi")], { admissionId: "a1", now: T0 + 1 }),
      ScopeFencedError,
    );
    await admissions.liftScopeFence({ org: "org-a" });
    t.expect(
      (await sessions.append(SCOPE_A, "s1", [userMsg("hi")], { admissionId: "a1", now: T0 + 1 }))
        .revision,
    ).toBe(1);
  });

  test("a stale admission under a fence is still a plain FenceError (the admission rule comes first)", async ({
    admissions,
    sessions,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    await admissions.finish(SCOPE_A, "a1");
    await fence(admissions, SCOPE_A);
    const error = await rejects(
      t,
      () => sessions.append(SCOPE_A, "s1", [userMsg("hi")], { admissionId: "a1", now: T0 + 1 }),
      FenceError,
      "fenced",
    );
    t.expect(error).not.toBeInstanceOf(ScopeFencedError);
  });
}

/** A claim made under admission `admissionId` of `scope`: its fence, for the dispatch. */
async function claimedUnder(
  execution: StoreSet["execution"],
  operationId: string,
  admissionId: string,
  scope: Scope = SCOPE_A,
) {
  const result = await execution.claim(claimOf(operationId, { scope }), { admissionId });
  if (result.status !== "claimed") throw new Error(`expected a fence for ${operationId}`);
  return result.fence;
}

function fenceDispatchTests(t: TestApi, test: Declare): void {
  test("a claim made before the fence is not dispatched after it: ScopeFencedError, the record still prepared", async ({
    admissions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    await admitWith(admissions, { admissionId: "a2", scope: SCOPE_A2 });
    await admitWith(admissions, { admissionId: "b1", scope: SCOPE_B });
    const own = await claimedUnder(execution, "op-1", "a1");
    const other = await claimedUnder(execution, "op-2", "a2", SCOPE_A2);
    const tenant = await claimedUnder(execution, "op-3", "b1", SCOPE_B);
    // A uid fence: that scope only.
    await fence(admissions, SCOPE_A);
    await rejects(t, () => execution.dispatch(own, T0 + 1), ScopeFencedError, "scope_fenced");
    t.expect(await execution.get(SCOPE_A, "op-1")).toMatchObject({
      state: "prepared",
      fenceToken: own.token,
      updatedAt: T0,
    });
    t.expect((await execution.dispatch(other, T0 + 1)).state).toBe("dispatching");
    // The org's fence covers every uid of it; another tenant is untouched.
    await fence(admissions, { org: "org-a" });
    const later = await claimedUnder(execution, "op-4", "b1", SCOPE_B);
    await admissions.liftScopeFence(SCOPE_A);
    await rejects(t, () => execution.dispatch(own, T0 + 2), ScopeFencedError);
    t.expect((await execution.get(SCOPE_A, "op-1"))?.state).toBe("prepared");
    t.expect((await execution.dispatch(tenant, T0 + 2)).state).toBe("dispatching");
    t.expect((await execution.dispatch(later, T0 + 2)).state).toBe("dispatching");
    // The refused record can still be cancelled by its owner (a transition, never fenced).
    t.expect(await execution.cancelPrepared(own, "scope_fenced", T0 + 3)).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "scope_fenced",
    });
  });

  test("after the lift the same claim and a new one dispatch; a fence refuses before the record's state is read", async ({
    admissions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "a1" });
    const first = await claimedUnder(execution, "op-1", "a1");
    await fence(admissions, { org: "org-a" });
    await rejects(t, () => execution.dispatch(first, T0 + 1), ScopeFencedError);
    // A stale fence under a fence is refused too: nothing is written either way.
    await rejects(
      t,
      () => execution.dispatch({ ...first, token: first.token + 1 }, T0 + 1),
      ScopeFencedError,
    );
    t.expect(await admissions.liftScopeFence({ org: "org-a" })).toBe(true);
    t.expect((await execution.dispatch(first, T0 + 2)).state).toBe("dispatching");
    const next = await claimedUnder(execution, "op-2", "a1");
    t.expect(await execution.dispatch(next, T0 + 3)).toMatchObject({
      state: "dispatching",
      updatedAt: T0 + 3,
    });
    // A dispatched record under a new fence: the fence does not stop what is already on its way.
    await fence(admissions, SCOPE_A);
    t.expect((await execution.receive(next, { status: "unknown" }, T0 + 4)).state).toBe("received");
  });
}

function expiryFilterTests(t: TestApi, test: Declare): void {
  test("releaseExpired narrowed to one session and kind: at deadline + grace it releases, one ms before it does not", async ({
    admissions,
  }) => {
    const deadlineAt = T0 + 60_000;
    await admitWith(admissions, { admissionId: "e1", kind: "events", deadlineAt });
    await admitWith(admissions, { admissionId: "t1", sessionId: "s2", kind: "turn", deadlineAt });
    await admitWith(admissions, { admissionId: "e2", sessionId: "s3", kind: "events", deadlineAt });
    const only = { scope: SCOPE_A, sessionId: "s1", kind: "events" as const, graceMs: GRACE };
    t.expect(await admissions.releaseExpired({ ...only, now: deadlineAt + GRACE - 1 })).toEqual([]);
    const released = await admissions.releaseExpired({ ...only, now: deadlineAt + GRACE });
    t.expect(released.map((a) => [a.admissionId, a.state, a.releaseReason])).toEqual([
      ["e1", "released", "expired"],
    ]);
    // A turn's admission is never released by an events-only sweep, even in its own session.
    t.expect(
      await admissions.releaseExpired({
        scope: SCOPE_A,
        sessionId: "s2",
        kind: "events",
        now: deadlineAt + GRACE,
        graceMs: GRACE,
      }),
    ).toEqual([]);
    t.expect((await admissions.get(SCOPE_A, "t1"))?.state).toBe("active");
    t.expect((await admissions.get(SCOPE_A, "e2"))?.state).toBe("active");
  });

  test("releaseExpired refuses a session without its scope, and a kind outside the vocabulary", async ({
    admissions,
  }) => {
    await rejects(
      t,
      () => admissions.releaseExpired(unsafe({ sessionId: "s1", now: T0, graceMs: 0 })),
      ValidationError,
    );
    await rejects(
      t,
      () =>
        admissions.releaseExpired(unsafe({ scope: SCOPE_A, kind: "turns", now: T0, graceMs: 0 })),
      ValidationError,
    );
  });
}
