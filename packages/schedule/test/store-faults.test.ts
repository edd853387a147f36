import { InjectedStoreFault, tapStore } from "@alma-harness/testing";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { createRoutineScheduler } from "../src/index.js";
import { routineOf, SCOPE, SLOT1, setup } from "./harness.js";

type Mode = "before" | "after";

/** One host whose routine stores fail at their `failAt`-th call (counted across both) in `mode`; `failAt` 0 never fails. */
function faultyHost(failAt: number, mode: Mode) {
  const h = setup({
    script: [
      scriptedText("summary", { usage: { inputTokens: 5, outputTokens: 5 } }),
      scriptedText("must not run", { usage: { inputTokens: 5, outputTokens: 5 } }),
    ],
  });
  const calls: string[] = [];
  const tap = (store: string) => async (method: string, call: () => Promise<unknown>) => {
    calls.push(`${store}.${method}`);
    const n = calls.length;
    if (n === failAt && mode === "before") throw new InjectedStoreFault("before", store, method);
    const out = await call();
    if (n === failAt && mode === "after") throw new InjectedStoreFault("after", store, method);
    return out;
  };
  const scheduler = createRoutineScheduler({
    routines: tapStore(h.stores.routines, tap("routines")),
    runs: tapStore(h.stores.routineRuns, tap("routineRuns")),
    sink: h.sink,
    turns: h.turns,
    owner: "host-a",
    clock: h.clock,
  });
  return { ...h, calls, faulty: scheduler };
}

describe("schedule: a store fault at each routine-store call of a tick, before and after its effect", async () => {
  const clean = faultyHost(0, "before");
  await clean.stores.routines.put(routineOf());
  await clean.faulty.tick();
  const total = clean.calls.length;

  it("a clean tick makes a known sequence of store calls (the fault points below)", () => {
    expect(clean.calls).toEqual([
      "routineRuns.reconcileInterrupted",
      "routines.scan",
      "routineRuns.latest",
      "routineRuns.claim",
      "routineRuns.finish",
    ]);
    expect(clean.model.calls).toBe(1);
  });

  for (let at = 1; at <= total; at++) {
    for (const mode of ["before", "after"] as const) {
      it(`call ${at} (${clean.calls[at - 1]}) fails ${mode}: at most one turn and one delivery, and the slot ends recorded, never run twice`, async () => {
        const h = faultyHost(at, mode);
        await h.stores.routines.put(routineOf());
        await h.faulty.tick();
        // Recovery: the tick again now, then after an interrupted claim's bound.
        await h.faulty.tick();
        h.clock.advance(31 * 60_000);
        await h.faulty.tick();
        expect(h.model.calls, "never a second turn for the slot").toBeLessThanOrEqual(1);
        expect(h.sink.calls, "never a second delivery").toBeLessThanOrEqual(1);
        const run = await h.stores.routineRuns.get(SCOPE, "daily-summary", SLOT1);
        expect(run, "the slot is recorded").toBeDefined();
        expect(run?.state, "nothing is left running").not.toBe("running");
        if (run?.state === "completed") expect(h.sink.delivered).toHaveLength(1);
        if (h.model.calls === 0) expect(["missed", "completed"]).toContain(run?.state);
        // A claim whose acknowledgement was lost is read back and run; a lost finish is kept or reconciled, not re-run.
        if (mode === "after" && clean.calls[at - 1] === "routineRuns.claim")
          expect(run?.state).toBe("completed");
        if (mode === "after" && clean.calls[at - 1] === "routineRuns.finish")
          expect(run?.state).toBe("completed");
        if (mode === "before" && clean.calls[at - 1] === "routineRuns.finish")
          expect(run).toMatchObject({ state: "reconciliation_required", reason: "interrupted" });
      });
    }
  }
});
