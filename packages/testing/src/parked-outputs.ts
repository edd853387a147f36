/** The parked-turn contract's outputs group: the messages a turn stored once, referred to by digest. */
import { FenceError, ScopeFencedError, ValidationError } from "@alma-harness/core";
import { deepFrozen, rejects, SCOPE_A, SCOPE_B, settleAll, T0, type TestApi } from "./harness.js";
import {
  admit,
  checkpointOf,
  claimOf,
  type Declare,
  digestOf,
  EXPIRES,
  parkOf,
} from "./parked-kit.js";

const said = (n: number, text = `message ${n}`) => ({
  digest: digestOf(1000 + n),
  message: { role: "assistant", blocks: [{ type: "text", text }] },
});

export function outputTests(t: TestApi, test: Declare): void {
  test("outputs accumulate across a turn's checkpoints, park and resume; a digest held keeps its first message", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.checkpoint(checkpointOf({ outputs: [said(2), said(1)] }));
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.outputs).toEqual([said(1), said(2)]);
    // A later boundary adds what is new; the same digest again changes nothing.
    const parked = await fx.parked.park(
      parkOf({ now: T0 + 20, outputs: [said(3), said(1, "another text")] }),
    );
    t.expect(parked.outputs).toEqual([said(1), said(2), said(3)]);
    t.expect(deepFrozen(parked)).toBe(true);
    const claimed = await fx.parked.claim(claimOf());
    if (claimed.status !== "claimed") throw new Error("not claimed");
    t.expect(claimed.turn.outputs).toEqual([said(1), said(2), said(3)]);
    await fx.parked.checkpoint(
      checkpointOf({ admissionId: "a2", now: T0 + 40, outputs: [said(4)] }),
    );
    const stored = await fx.parked.get(SCOPE_A, "root-1");
    t.expect(stored?.outputs.map((o) => o.digest)).toEqual([1, 2, 3, 4].map((n) => said(n).digest));
    t.expect(deepFrozen(stored)).toBe(true);
    // Listings never carry them.
    const [listed] = await fx.parked.list({ org: SCOPE_A.org });
    t.expect(listed && "outputs" in listed).toBe(false);
  });

  test("outputs of an open shape, a bad or repeated digest, or no message are refused and nothing is written", async (fx) => {
    await admit(fx, "a1");
    const bad: unknown[] = [
      "not a list",
      [{ digest: "sha256:abc", message: {} }],
      [said(1), said(1)],
      [{ ...said(1), extra: true }],
      [{ digest: said(1).digest }],
    ];
    for (const outputs of bad) {
      await rejects(t, () => fx.parked.checkpoint(checkpointOf({ outputs })), ValidationError);
      await rejects(
        t,
        () => fx.parked.park(parkOf({ outputs: outputs as never })),
        ValidationError,
      );
    }
    t.expect(await fx.parked.get(SCOPE_A, "root-1")).toBeUndefined();
  });

  test("a fenced checkpoint or park writes no output", async (fx) => {
    await admit(fx, "a1", { deadlineAt: T0 + 100 });
    await fx.parked.checkpoint(checkpointOf({ outputs: [said(1)] }));
    const late = checkpointOf({ now: T0 + 100, outputs: [said(2)] });
    await rejects(t, () => fx.parked.checkpoint(late), FenceError);
    await fx.admissions.fenceScope({ target: SCOPE_A, reason: "operator", now: T0 });
    await rejects(t, () => fx.parked.park(parkOf({ outputs: [said(3)] })), ScopeFencedError);
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.outputs).toEqual([said(1)]);
  });

  test("outputs go with their turn: done and erasure remove them; another scope's never show", async (fx) => {
    await admit(fx, "a1");
    await fx.parked.park(parkOf({ outputs: [said(1)] }));
    await admit(fx, "b1", { scope: SCOPE_B });
    await fx.parked.park(parkOf({ scope: SCOPE_B, admissionId: "b1", outputs: [said(2)] }));
    t.expect((await fx.parked.get(SCOPE_B, "root-1"))?.outputs).toEqual([said(2)]);
    // Done by the holder, then a new run of the same root stores none of the old outputs.
    const claimed = await fx.parked.claim(claimOf());
    t.expect(claimed.status === "claimed" && claimed.turn.outputs).toEqual([said(1)]);
    t.expect(await fx.parked.done(SCOPE_A, "root-1", "a2")).toBe(true);
    await fx.admissions.finish(SCOPE_A, "a2");
    await admit(fx, "a3");
    await fx.parked.park(parkOf({ admissionId: "a3", now: T0 + 60 }));
    t.expect((await fx.parked.get(SCOPE_A, "root-1"))?.outputs).toEqual([]);
    // Erasure takes the session's turns and their outputs.
    await fx.erasure.eraseSession(SCOPE_B, "s1", { auditSessionId: "s1" });
    t.expect(await fx.parked.get(SCOPE_B, "root-1")).toBeUndefined();
    await admit(fx, "b2", { scope: SCOPE_B });
    await fx.parked.park(parkOf({ scope: SCOPE_B, admissionId: "b2", expiresAt: EXPIRES + 1 }));
    t.expect((await fx.parked.get(SCOPE_B, "root-1"))?.outputs).toEqual([]);
  });

  test("concurrent checkpoints of one run adding the same digest keep one output", async (fx) => {
    await admit(fx, "a1");
    const { failed } = await settleAll(
      Array.from({ length: 6 }, (_, i) =>
        fx.parked.checkpoint(checkpointOf({ now: T0 + 10 + i, outputs: [said(1), said(2 + i)] })),
      ),
    );
    t.expect(failed).toEqual([]);
    const stored = await fx.parked.get(SCOPE_A, "root-1");
    t.expect(stored?.outputs.filter((o) => o.digest === said(1).digest)).toEqual([said(1)]);
    t.expect(stored?.outputs).toHaveLength(7);
  });
}
