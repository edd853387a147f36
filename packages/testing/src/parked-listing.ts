import { FenceError, type Scope, ScopeFencedError, ValidationError } from "@alma-harness/core";
import { deepFrozen, rejects, SCOPE_A, SCOPE_A2, SCOPE_B, T0, type TestApi } from "./harness.js";

import {
  admit,
  askIdOf,
  askOf,
  CONTINUATION,
  checkpointOf,
  claimOf,
  type Declare,
  digestOf,
  OPERATOR,
  type ParkedFixture,
  parkOf,
} from "./parked-kit.js";

export function listingTests(t: TestApi, test: Declare): void {
  test("due lists parks at or past their expiry and resuming turns whose run's deadline passed, oldest expiry first", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ expiresAt: T0 + 5_000 }));
    await admit(fx, "b1", { sessionId: "s2", rootKey: "root-2" });
    await fx.parked.park(
      parkOf({ sessionId: "s2", rootKey: "root-2", admissionId: "b1", expiresAt: T0 + 4_000 }),
    );
    await fx.parked.claim(
      claimOf({ rootKey: "root-2", admissionId: "b2", deadlineAt: T0 + 3_000 }),
    );
    await admit(fx, "c1", { scope: SCOPE_B });
    await fx.parked.park(parkOf({ scope: SCOPE_B, admissionId: "c1", expiresAt: T0 + 1_000 }));
    const keys = async (now: number, scope?: Scope) =>
      (await fx.parked.due({ now, ...(scope ? { scope } : {}) })).map((d) => [
        d.scope.org,
        d.rootKey,
      ]);
    t.expect(await keys(T0 + 999)).toEqual([]);
    t.expect(await keys(T0 + 3_000)).toEqual([
      ["org-b", "root-1"],
      ["org-a", "root-2"],
    ]);
    t.expect(await keys(T0 + 5_000, SCOPE_A)).toEqual([
      ["org-a", "root-2"],
      ["org-a", "root-1"],
    ]);
    const summary = (await fx.parked.due({ now: T0 + 5_000 }))[0];
    t.expect(summary && "continuation" in summary).toBe(false);
  });

  test("due lists a park whose every ask is decided before its expiry (its resume may have died unstarted)", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ asks: [askOf(1), askOf(2)] }));
    const decide = (n: number) =>
      fx.parked.decide({
        scope: SCOPE_A,
        askId: askIdOf(n),
        digest: digestOf(n),
        decision: OPERATOR,
        now: T0 + 20,
      });
    await decide(1);
    t.expect(await fx.parked.due({ now: T0 + 30 })).toEqual([]);
    await decide(2);
    t.expect((await fx.parked.due({ now: T0 + 30 })).map((d) => d.rootKey)).toEqual(["root-1"]);
  });

  test("list pages an org's (or one scope's) parked turns without their continuations; find locates an ask across scopes", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    await admit(fx, "d1", { scope: SCOPE_A2 });
    await fx.parked.park(
      parkOf({ scope: SCOPE_A2, admissionId: "d1", now: T0 + 11, asks: [askOf(2)] }),
    );
    await admit(fx, "c1", { scope: SCOPE_B });
    await fx.parked.park(parkOf({ scope: SCOPE_B, admissionId: "c1" }));
    const org = await fx.parked.list({ org: "org-a" });
    t.expect(org.map((p) => p.scope.uid)).toEqual(["user-1", "user-2"]);
    t.expect(org.some((p) => "continuation" in p)).toBe(false);
    t.expect(
      (await fx.parked.list({ org: "org-a", uid: "user-2" })).map((p) => p.admissionId),
    ).toEqual(["d1"]);
    t.expect(await fx.parked.list({ org: "org-a", limit: 1 })).toHaveLength(1);
    await rejects(t, () => fx.parked.list({ org: "org-a", limit: 0 }), ValidationError);
    const found = await fx.parked.find(askIdOf(1));
    t.expect(found.map((p) => p.scope.org).sort()).toEqual(["org-a", "org-b"]);
    t.expect(await fx.parked.find(askIdOf(7))).toEqual([]);
  });

  test("erasing a session removes its parked turn; another session's stays", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    await admit(fx, "b1", { sessionId: "s2", rootKey: "root-2" });
    await fx.parked.park(parkOf({ sessionId: "s2", rootKey: "root-2", admissionId: "b1" }));
    await fx.erasure.eraseSession(SCOPE_A, "s1", { auditSessionId: "s1" });
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
    t.expect(await fx.parked.find(askIdOf(1))).toHaveLength(1);
    t.expect((await fx.parked.get(SCOPE_A, "root-2"))?.sessionId).toBe("s2");
  });
}

export function checkpointTests(t: TestApi, test: Declare): void {
  test("a running turn's checkpoint is resuming under its admission, with no asks; the admission is unchanged", async (fx) => {
    await admit(fx, "a1");
    const summary = await fx.parked.checkpoint(checkpointOf());
    t.expect(summary).toEqual({
      scope: SCOPE_A,
      sessionId: "s1",
      rootKey: "root-1",
      admissionId: "a1",
      state: "resuming",
      asks: [],
      parkedAt: T0 + 10,
      expiresAt: T0 + 60_000,
      runs: 0,
    });
    t.expect(deepFrozen(summary)).toBe(true);
    const next = { ...CONTINUATION, step: 3 };
    await fx.parked.checkpoint(checkpointOf({ continuation: next, now: T0 + 20 }));
    const stored = await fx.parked.get(SCOPE_A, "root-1");
    t.expect([stored?.continuation, stored?.parkedAt]).toEqual([next, T0 + 20]);
    t.expect((await fx.admissions.get(SCOPE_A, "a1"))?.deadlineAt).toBe(T0 + 60_000);
    // Nothing is due while the run holds its admission.
    t.expect(await fx.parked.due({ now: T0 + 59_999 })).toEqual([]);
  });

  test("a checkpoint by an admission that no longer holds the session, or in a fenced scope, writes nothing", async (fx) => {
    await admit(fx, "a1", { deadlineAt: T0 + 100 });
    await rejects(t, () => fx.parked.checkpoint(checkpointOf({ now: T0 + 100 })), FenceError);
    await rejects(t, () => fx.parked.checkpoint(checkpointOf({ rootKey: "root-9" })), FenceError);
    await rejects(t, () => fx.parked.checkpoint(checkpointOf({ sessionId: "s9" })), FenceError);
    await rejects(
      t,
      () => fx.parked.checkpoint(checkpointOf({ continuation: undefined })),
      ValidationError,
    );
    await fx.admissions.fenceScope({ target: SCOPE_A, reason: "operator", now: T0 });
    await rejects(t, () => fx.parked.checkpoint(checkpointOf()), ScopeFencedError);
    await fx.admissions.liftScopeFence(SCOPE_A);
    await fx.admissions.finish(SCOPE_A, "a1");
    await rejects(t, () => fx.parked.checkpoint(checkpointOf()), FenceError);
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
  });

  test("a run that died after its checkpoint is due past its deadline and claimed like a dead resume", async (fx) => {
    await admit(fx, "a1", { deadlineAt: T0 + 1_000 });
    await fx.parked.checkpoint(checkpointOf());
    t.expect((await fx.parked.due({ now: T0 + 1_000 })).map((d) => d.rootKey)).toEqual(["root-1"]);
    const claimed = await fx.parked.claim(claimOf({ admissionId: "a2", now: T0 + 1_000 }));
    t.expect(claimed.status === "claimed" && [claimed.from, claimed.turn.runs]).toEqual([
      "resuming",
      1,
    ]);
    const dead = await fx.admissions.get(SCOPE_A, "a1");
    t.expect([dead?.state, dead?.releaseReason]).toEqual(["released", "expired"]);
    // The new run checkpoints under its own admission: runs kept, still one record.
    const again = await fx.parked.checkpoint(checkpointOf({ admissionId: "a2", now: T0 + 1_010 }));
    t.expect([again.admissionId, again.runs]).toEqual(["a2", 1]);
  });

  test("a resumed run's checkpoint replaces its park: the asks are gone from every lookup", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf());
    await fx.parked.decide({
      scope: SCOPE_A,
      askId: askIdOf(1),
      digest: digestOf(1),
      decision: OPERATOR,
      now: T0 + 20,
    });
    await fx.parked.claim(claimOf());
    const summary = await fx.parked.checkpoint(checkpointOf({ admissionId: "a2", now: T0 + 40 }));
    t.expect([summary.state, summary.asks, summary.runs]).toEqual(["resuming", [], 1]);
    t.expect(await fx.parked.find(askIdOf(1))).toEqual([]);
    t.expect(await fx.parked.list({ org: "org-a" })).toHaveLength(1);
    t.expect(
      (
        await fx.parked.decide({
          scope: SCOPE_A,
          askId: askIdOf(1),
          digest: digestOf(1),
          decision: OPERATOR,
          now: T0 + 50,
        })
      ).status,
    ).toBe("unknown");
  });
}

/** `n` turns parked then resumed by a live run (their asks' expiry passed, their run's deadline not). */
async function liveResumed(fx: ParkedFixture, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const turn = { scope: SCOPE_A, sessionId: `s${i}`, rootKey: `root-${i}` };
    await admit(fx, `a${i}`, turn);
    await fx.parked.park(
      parkOf({ ...turn, admissionId: `a${i}`, asks: [askOf(i + 1)], expiresAt: T0 + 1_000 + i }),
    );
    await fx.parked.claim(
      claimOf({
        rootKey: turn.rootKey,
        admissionId: `b${i}`,
        now: T0 + 20,
        deadlineAt: T0 + 600_000,
      }),
    );
  }
}

/** `due` pages through its candidates: a due turn behind more than a page of undue ones is found. */
export function paging(t: TestApi, test: Declare): void {
  test("due finds a due park behind more than a page of candidates that are not due", async (fx) => {
    await liveResumed(fx, 130);
    const turn = { sessionId: "sz", rootKey: "root-z" };
    await admit(fx, "z1", turn);
    await fx.parked.park(
      parkOf({ ...turn, admissionId: "z1", asks: [askOf(999)], expiresAt: T0 + 5_000 }),
    );
    const keys = async (limit?: number) =>
      (await fx.parked.due({ now: T0 + 10_000, ...(limit ? { limit } : {}) })).map(
        (d) => d.rootKey,
      );
    t.expect(await keys(1)).toEqual(["root-z"]);
    t.expect(await keys()).toEqual(["root-z"]);
    // Once the live runs' deadline passes, every one is due, oldest expiry first, a page at a time.
    const all = await fx.parked.due({ now: T0 + 600_000, limit: 500 });
    t.expect(all.map((d) => d.rootKey)).toEqual([
      ...Array.from({ length: 130 }, (_, i) => `root-${i}`),
      "root-z",
    ]);
    t.expect(await fx.parked.due({ now: T0 + 600_000, limit: 3 })).toHaveLength(3);
  });
}
