import {
  ConflictError,
  FenceError,
  type ParkInput,
  ScopeFencedError,
  ValidationError,
} from "@alma-harness/core";
import {
  contractSuite,
  deepFrozen,
  type Factory,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
} from "./harness.js";

import {
  admit,
  askIdOf,
  askOf,
  CONTINUATION,
  claimOf,
  type Declare,
  digestOf,
  EXPIRES,
  OPERATOR,
  type ParkedFixture,
  parkOf,
} from "./parked-kit.js";
import { checkpointTests, listingTests, paging } from "./parked-listing.js";
import { outputTests } from "./parked-outputs.js";

export { askIdOf, digestOf, type ParkedFixture } from "./parked-kit.js";

/** The `ParkedTurnStore` contract (issue 25): parks that hold the session, first-wins decisions, one resume. */
export function parkedTurnStoreContract(
  name: string,
  factory: Factory<ParkedFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: ParkedTurnStore contract`, factory, [
    parkTests,
    checkpointTests,
    refusalTests,
    decideTests,
    claimTests,
    listingTests,
    paging,
    outputTests,
  ]);
}

function parkTests(t: TestApi, test: Declare): void {
  test("park stores the turn, moves its admission's deadline to the expiry, and the session stays held", async (fx) => {
    await admit(fx, "a1");
    const parked = await fx.parked.park(parkOf());
    t.expect(parked).toEqual({
      scope: SCOPE_A,
      sessionId: "s1",
      rootKey: "root-1",
      admissionId: "a1",
      state: "parked",
      asks: [askOf(1)],
      parkedAt: T0 + 10,
      expiresAt: EXPIRES,
      runs: 0,
      continuation: CONTINUATION,
      outputs: [],
    });
    t.expect(deepFrozen(parked)).toBe(true);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toEqual(parked);
    const held = await fx.admissions.get(SCOPE_A, "a1");
    t.expect([held?.state, held?.deadlineAt]).toEqual(["active", EXPIRES]);
    const other = await fx.admissions.admit({
      scope: SCOPE_A,
      sessionId: "s1",
      rootKey: "root-2",
      kind: "turn",
      admissionId: "a2",
      now: T0 + 20,
      deadlineAt: T0 + 60_000,
    });
    t.expect(other.status).toBe("busy");
  });

  test("a park holds up to 64 asks; 0, 65, duplicate ids, a bad id or digest, or an expiry not after now are refused", async (fx) => {
    await admit(fx, "a1");
    const many = Array.from({ length: 65 }, (_, i) => askOf(i + 1));
    const bad: Partial<ParkInput>[] = [
      { asks: [] },
      { asks: many },
      { asks: [askOf(1), askOf(1)] },
      { asks: [{ ...askOf(1), askId: "ask_1" }] },
      { asks: [{ ...askOf(1), digest: "sha256:abc" }] },
      { asks: [{ ...askOf(1), extra: 1 } as never] },
      { expiresAt: T0 + 10 },
    ];
    for (const over of bad) await rejects(t, () => fx.parked.park(parkOf(over)), ValidationError);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
    const full = await fx.parked.park(parkOf({ asks: many.slice(0, 64) }));
    t.expect(full.asks).toHaveLength(64);
  });

  test("a park by an admission that no longer holds the session (finished, past its deadline, another root's) is fenced and stores nothing", async (fx) => {
    await admit(fx, "a1", { deadlineAt: T0 + 100 });
    await rejects(t, () => fx.parked.park(parkOf({ now: T0 + 100 })), FenceError);
    await rejects(t, () => fx.parked.park(parkOf({ rootKey: "root-9" })), FenceError);
    await fx.admissions.finish(SCOPE_A, "a1");
    await rejects(t, () => fx.parked.park(parkOf()), FenceError);
    await rejects(t, () => fx.parked.park(parkOf({ admissionId: "nobody" })), FenceError);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
    t.expect((await fx.admissions.get(SCOPE_A, "a1"))?.deadlineAt).toBe(T0 + 100);
  });
}

function refusalTests(t: TestApi, test: Declare): void {
  test("a park in a fenced scope throws ScopeFencedError and stores nothing", async (fx) => {
    await admit(fx, "a1");
    await fx.admissions.fenceScope({ target: { org: "org-a" }, reason: "operator", now: T0 });
    await rejects(t, () => fx.parked.park(parkOf()), ScopeFencedError);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
  });

  test("another scope's parked turn and ask read as absent", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    t.expect(await fx.parked.get(SCOPE_A2, "root-1")).toBeUndefined();
    t.expect(await fx.parked.get(SCOPE_B, "root-1")).toBeUndefined();
    const d = { askId: askIdOf(1), digest: digestOf(1), decision: OPERATOR, now: T0 + 20 };
    t.expect(await fx.parked.decide({ scope: SCOPE_B, ...d })).toEqual({ status: "unknown" });
    t.expect(
      await fx.parked.claim({
        scope: SCOPE_A2,
        rootKey: "root-1",
        admissionId: "x",
        now: T0 + 20,
        deadlineAt: T0 + 600_000,
      }),
    ).toEqual({ status: "not_claimable" });
  });
}

function decideTests(t: TestApi, test: Declare): void {
  const decide = (fx: ParkedFixture, over: Record<string, unknown> = {}) =>
    fx.parked.decide({
      scope: SCOPE_A,
      askId: askIdOf(1),
      digest: digestOf(1),
      decision: OPERATOR,
      now: T0 + 20,
      ...over,
    } as never);

  test("the first decision is recorded; an equal one is same; another is conflict and the first stands", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ asks: [askOf(1), askOf(2)] }));
    const first = await decide(fx);
    t.expect(first.status).toBe("recorded");
    const decision = { ...OPERATOR, decidedAt: T0 + 20 };
    t.expect(first.status === "recorded" && first.turn.asks[0]?.decision).toEqual(decision);
    t.expect(first.status === "recorded" && first.turn.asks[1]?.decision).toBeUndefined();
    t.expect((await decide(fx, { now: T0 + 30 })).status).toBe("same");
    const denied = { allowed: false, by: "operator", reason: "operator_denied" };
    t.expect(await decide(fx, { decision: denied })).toEqual({ status: "conflict", decision });
    const stored = await fx.parked.get(SCOPE_A, "root-1");
    t.expect(stored?.asks[0]?.decision).toEqual(decision);
  });

  test("a decision for another digest is refused and records nothing", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    t.expect(await decide(fx, { digest: digestOf(9) })).toEqual({ status: "digest_mismatch" });
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.asks[0]?.decision).toBeUndefined();
  });

  test("an undecided ask takes a decision until its expiry, not at it", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ asks: [askOf(1), askOf(2)] }));
    t.expect(await decide(fx, { askId: askIdOf(2), digest: digestOf(2), now: EXPIRES })).toEqual({
      status: "expired",
    });
    t.expect((await decide(fx, { now: EXPIRES - 1 })).status).toBe("recorded");
  });

  test("a decision attributed dishonestly, or of an open shape, is refused", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    const bad = [
      { allowed: false, by: "operator", reason: "ask_expired" },
      { allowed: true, by: "operator", reason: "operator_denied" },
      { allowed: false, by: "kernel" },
      { allowed: "yes", by: "operator" },
      { allowed: true, by: "someone" },
      { allowed: true, by: "operator", extra: 1 },
    ];
    for (const decision of bad) await rejects(t, () => decide(fx, { decision }), ValidationError);
    await rejects(t, () => decide(fx, { askId: "ask_x" }), ValidationError);
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.asks[0]?.decision).toBeUndefined();
  });

  test("of concurrent different decisions on one ask exactly one is recorded and it stands", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    const { ok } = await settleAll(
      Array.from({ length: 10 }, (_, i) =>
        decide(fx, {
          decision: i % 2 ? OPERATOR : { allowed: false, by: "operator" },
          now: T0 + 20 + i,
        }),
      ),
    );
    t.expect(ok).toHaveLength(10);
    t.expect(ok.filter((r) => r.status === "recorded")).toHaveLength(1);
    const stored = (await fx.parked.get(SCOPE_A, "root-1"))?.asks[0]?.decision;
    for (const r of ok)
      if (r.status === "conflict") t.expect(r.decision).toEqual(stored);
      else t.expect(r.status === "recorded" || r.status === "same").toBe(true);
  });
}

function claimTests(t: TestApi, test: Declare): void {
  test("a claim moves the park to a fresh admission that holds the session; the parked one is finished", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    const claimed = await fx.parked.claim(claimOf());
    if (claimed.status !== "claimed") throw new Error("not claimed");
    t.expect([
      claimed.from,
      claimed.turn.state,
      claimed.turn.admissionId,
      claimed.turn.runs,
    ]).toEqual(["parked", "resuming", "a2", 1]);
    t.expect(claimed.turn.continuation).toEqual(CONTINUATION);
    t.expect([claimed.admission.state, claimed.admission.deadlineAt]).toEqual([
      "active",
      T0 + 600_000,
    ]);
    t.expect((await fx.admissions.get(SCOPE_A, "a1"))?.state).toBe("finished");
    t.expect((await fx.admissions.holder(SCOPE_A, "s1"))?.admissionId).toBe("a2");
    // A decision arrives too late once a run took the turn.
    t.expect(
      (
        await fx.parked.decide({
          scope: SCOPE_A,
          askId: askIdOf(1),
          digest: digestOf(1),
          decision: OPERATOR,
          now: T0 + 40,
        })
      ).status,
    ).toBe("expired");
  });

  test("of concurrent claims exactly one wins", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    const { ok, failed } = await settleAll(
      Array.from({ length: 8 }, (_, i) => fx.parked.claim(claimOf({ admissionId: `c${i}` }))),
    );
    t.expect(failed).toEqual([]);
    const won = ok.filter((r) => r.status === "claimed");
    t.expect(won).toHaveLength(1);
    const holder = await fx.admissions.holder(SCOPE_A, "s1");
    t.expect(holder?.admissionId).toBe(
      won[0]?.status === "claimed" && won[0].admission.admissionId,
    );
  });

  test("a resuming turn is claimable only once its run's deadline passed; the dead run's admission is released", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    await fx.parked.claim(claimOf({ deadlineAt: T0 + 1_000 }));
    const early = await fx.parked.claim(claimOf({ admissionId: "a3", now: T0 + 999 }));
    t.expect(early.status).toBe("not_claimable");
    const late = await fx.parked.claim(claimOf({ admissionId: "a3", now: T0 + 1_000 }));
    t.expect(late.status === "claimed" && [late.from, late.turn.runs]).toEqual(["resuming", 2]);
    const dead = await fx.admissions.get(SCOPE_A, "a2");
    t.expect([dead?.state, dead?.releaseReason]).toEqual(["released", "expired"]);
  });

  test("a claim under an admission id that exists conflicts; in a fenced scope it is refused; neither moves anything", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    await rejects(t, () => fx.parked.claim(claimOf({ admissionId: "a1" })), ConflictError);
    await fx.admissions.fenceScope({ target: SCOPE_A, reason: "operator", now: T0 });
    await rejects(t, () => fx.parked.claim(claimOf()), ScopeFencedError);
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.state).toBe("parked");
    t.expect((await fx.admissions.holder(SCOPE_A, "s1"))?.admissionId).toBe("a1");
  });

  test("a resumed run parks again under its own admission; done removes the turn only for the holding admission", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ asks: [askOf(1), askOf(2)] }));
    await fx.parked.claim(claimOf());
    const again = await fx.parked.park(
      parkOf({ admissionId: "a2", asks: [askOf(2)], now: T0 + 50, expiresAt: EXPIRES + 5 }),
    );
    t.expect([again.state, again.runs, again.asks, again.expiresAt]).toEqual([
      "parked",
      1,
      [askOf(2)],
      EXPIRES + 5,
    ]);
    t.expect(await fx.parked.done(SCOPE_A, "root-1", "a1")).toBe(false);
    t.expect(await fx.parked.done(SCOPE_A, "root-1", "a2")).toBe(true);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
    t.expect(await fx.parked.done(SCOPE_A, "root-1", "a2")).toBe(false);
  });
}
