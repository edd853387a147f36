import { type Routine, routineSessionId, ValidationError } from "@alma-harness/core";
import { scriptedError, scriptedText, scriptedTorn } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { DAY, FakeJobs, routineOf, SCOPE, SLOT1, setup } from "./harness.js";

const usage = { inputTokens: 50, outputTokens: 10 };

describe("schedule: a slot on time runs once through the governed loop and is delivered", () => {
  it("claims the slot, runs one turn in the run's own session, delivers it, records completed; the next tick does nothing", async () => {
    const h = setup({ script: [scriptedText("12 appointments, 2 no-shows.", { usage })] });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    const report = await s.tick();
    expect(report.ran).toHaveLength(1);
    const run = report.ran[0];
    expect(run).toMatchObject({
      state: "completed",
      slot: SLOT1,
      attempt: 1,
      owner: "host-a",
      costMicros: 10,
      sessionId: routineSessionId("daily-summary", SLOT1),
    });
    expect(run && "capsCrossed" in run, "no cap crossed: the array is absent").toBe(false);
    expect(run?.delivery).toEqual({
      destination: "staff-inbox",
      status: "delivered",
      at: h.clock.now(),
    });
    expect(h.sink.delivered.map((d) => [d.text, d.deliveryId, d.costMicros])).toEqual([
      ["12 appointments, 2 no-shows.", "daily-summary@2026-01-01T01:00:00.000Z#1", 10],
    ]);
    expect(h.model.calls).toBe(1);
    expect((await h.stores.sessions.load(SCOPE, run?.sessionId ?? "")).messages).toHaveLength(2);
    const again = await s.tick();
    expect(again.ran).toEqual([]);
    expect(h.model.calls).toBe(1);
  });

  it("at the grace bound the slot is on time; one millisecond past it is missed", async () => {
    const h = setup({ script: [scriptedText("ok", { usage })], start: SLOT1 + 5 * 60_000 });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    expect((await s.tick()).ran).toHaveLength(1);
    const late = setup({ start: SLOT1 + 5 * 60_000 + 1 });
    const l = late.scheduler();
    await l.saveRoutine(routineOf());
    const report = await l.tick();
    expect(report.missed.map((r) => [r.slot, r.state, r.reason])).toEqual([
      [SLOT1, "missed", "missed"],
    ]);
    expect(late.model.calls).toBe(0);
  });
});

describe("schedule: missed slots versus catchUp", () => {
  it("a host down for three days records the three old slots missed and runs only the one on time", async () => {
    const h = setup({
      script: [scriptedText("today", { usage })],
      start: SLOT1 + 3 * DAY + 60_000,
    });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    const report = await s.tick();
    expect(report.missed.map((r) => r.slot)).toEqual([SLOT1, SLOT1 + DAY, SLOT1 + 2 * DAY]);
    expect(report.ran.map((r) => [r.slot, r.state])).toEqual([[SLOT1 + 3 * DAY, "completed"]]);
    expect(h.model.calls).toBe(1);
    expect((await s.tick()).missed, "recorded once").toEqual([]);
  });

  it("with catchUp the missed slots run late, oldest first, each marked late", async () => {
    const h = setup({
      script: ["d1", "d2", "d3", "d4"].map((t) => scriptedText(t, { usage })),
      start: SLOT1 + 3 * DAY + 60_000,
    });
    const s = h.scheduler();
    await s.saveRoutine(routineOf({ catchUp: true }));
    const report = await s.tick();
    expect(report.missed).toEqual([]);
    expect(report.ran.map((r) => [r.slot - SLOT1, r.state, r.late ?? false])).toEqual([
      [0, "completed", true],
      [DAY, "completed", true],
      [2 * DAY, "completed", true],
      [3 * DAY, "completed", false],
    ]);
    expect(h.sink.delivered.map((d) => [d.text, d.late ?? false])).toEqual([
      ["d1", true],
      ["d2", true],
      ["d3", true],
      ["d4", false],
    ]);
  });

  it("a paused routine fires nothing; slots before its creation never fire", async () => {
    const h = setup({ start: SLOT1 + 60_000 });
    const s = h.scheduler();
    await s.saveRoutine(routineOf({ enabled: false }));
    await s.saveRoutine(routineOf({ id: "created-later", createdAt: SLOT1 + 1 }));
    const report = await s.tick();
    expect([...report.ran, ...report.missed]).toEqual([]);
    expect(h.model.calls).toBe(0);
  });
});

describe("schedule: one run per slot under concurrent claims", () => {
  it("eight schedulers (eight host processes on one store set) tick at once: one claim, one turn, one delivery", async () => {
    const h = setup({
      script: [scriptedText("once", { usage }), scriptedText("twice?", { usage })],
    });
    const hosts = Array.from({ length: 8 }, (_, i) => h.scheduler(`host-${i}`));
    await hosts[0]?.saveRoutine(routineOf());
    const reports = await Promise.all(hosts.map((s) => s.tick()));
    expect(reports.flatMap((r) => r.ran)).toHaveLength(1);
    expect(reports.reduce((n, r) => n + r.skipped, 0)).toBeGreaterThanOrEqual(0);
    expect(h.model.calls).toBe(1);
    expect(h.sink.calls).toBe(1);
    expect((await h.stores.routineRuns.list(SCOPE)).items).toHaveLength(1);
  });
});

describe("schedule: interrupted claims and uncertain runs are never re-run automatically", () => {
  it("a claim whose process died becomes reconciliation_required after interruptedAfterMs; ticks never run it; an operator's rerun runs attempt 2 once", async () => {
    const h = setup({
      script: [scriptedText("next day", { usage }), scriptedText("rerun result", { usage })],
    });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    // Another process claimed the slot and died before finishing it.
    await h.stores.routineRuns.claim({
      scope: SCOPE,
      routineId: "daily-summary",
      slot: SLOT1,
      sessionId: routineSessionId("daily-summary", SLOT1),
      owner: "dead-host",
      at: SLOT1 + 1,
    });
    expect((await s.tick()).ran).toEqual([]);
    await h.clock.advance(30 * 60_000);
    const report = await s.tick();
    expect(report.interrupted.map((r) => [r.slot, r.state, r.reason])).toEqual([
      [SLOT1, "reconciliation_required", "interrupted"],
    ]);
    await h.clock.advance(DAY - 31 * 60_000);
    const next = await s.tick();
    expect(
      next.ran.map((r) => r.slot),
      "the next day's slot runs; the interrupted one does not",
    ).toEqual([SLOT1 + DAY]);
    expect(h.model.calls).toBe(1);
    const rerun = await s.resolve(SCOPE, "daily-summary", SLOT1, "rerun");
    expect(rerun).toMatchObject({ state: "completed", attempt: 2, owner: "host-a" });
    expect(h.sink.delivered.map((d) => d.deliveryId)).toEqual([
      "daily-summary@2026-01-02T01:00:00.000Z#1",
      "daily-summary@2026-01-01T01:00:00.000Z#2",
    ]);
    expect(h.model.calls).toBe(2);
  });

  it("an uncertain turn (a torn stream) is reconciliation_required; the operator abandons it", async () => {
    const h = setup({ script: [scriptedTorn(scriptedText("half", { usage }))] });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    const report = await s.tick();
    expect(report.ran.map((r) => [r.state, r.reason])).toEqual([
      ["reconciliation_required", "turn_uncertain"],
    ]);
    expect(h.sink.calls).toBe(0);
    await h.clock.advance(60 * 60_000);
    expect((await s.tick()).ran).toEqual([]);
    expect(h.model.calls).toBe(1);
    expect(await s.resolve(SCOPE, "daily-summary", SLOT1, "abandon")).toMatchObject({
      state: "failed",
      reason: "operator_abandoned",
    });
  });

  it("a provider error before any output ends the run certainly or uncertainly, never retried by the schedule", async () => {
    const h = setup({ script: [scriptedError(new Error("socket hang up"))] });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    const [run] = (await s.tick()).ran;
    expect(["failed", "reconciliation_required"]).toContain(run?.state);
    expect(h.model.calls).toBe(1);
    expect((await s.tick()).ran).toEqual([]);
  });

  it("a delivery that threw is reconciliation_required (delivery_failed), keeps the turn's money, and is not delivered again by a tick", async () => {
    const h = setup({ script: [scriptedText("summary", { usage })] });
    const s = h.scheduler();
    await s.saveRoutine(routineOf());
    h.sink.failNext();
    const [run] = (await s.tick()).ran;
    expect(run).toMatchObject({
      state: "reconciliation_required",
      reason: "delivery_failed",
      costMicros: 10,
    });
    expect(run?.turnId).toBeDefined();
    await s.tick();
    expect(h.sink.calls).toBe(1);
    expect(await s.resolve(SCOPE, "daily-summary", SLOT1, "confirm_completed")).toMatchObject({
      state: "completed",
      reason: "operator_completed",
    });
  });
});

describe("schedule: the per-run cap, at the cap and one over", () => {
  // A call's worst case is maxOutputTokens (1,000) micro-dollars: input is free, output one micro a token.
  it("block: a cap equal to the call's worst case runs; one micro-dollar under it is a zero-cost budget stop", async () => {
    const at = setup({ script: [scriptedText("fits", { usage })] });
    await at.scheduler().saveRoutine(routineOf({ cap: { usd: 0.001, onExceeded: "block" } }));
    expect((await at.scheduler().tick()).ran.map((r) => r.state)).toEqual(["completed"]);
    const over = setup({ script: [scriptedText("never sent", { usage })] });
    await over.scheduler().saveRoutine(routineOf({ cap: { usd: 0.000999, onExceeded: "block" } }));
    const [run] = (await over.scheduler().tick()).ran;
    expect(run).toMatchObject({ state: "failed", reason: "budget_stopped", costMicros: 0 });
    expect(over.model.calls, "nothing was sent").toBe(0);
    expect(over.sink.calls).toBe(0);
  });

  it("warn: spend equal to the cap crosses nothing; one micro-dollar over is reported as capsCrossed on the run, its delivery and the output", async () => {
    const at = setup({ script: [scriptedText("at", { usage })] });
    await at.scheduler().saveRoutine(routineOf({ cap: { usd: 0.00001, onExceeded: "warn" } }));
    const [atRun] = (await at.scheduler().tick()).ran;
    expect(atRun?.state).toBe("completed");
    expect(atRun && "capsCrossed" in atRun).toBe(false);
    expect(at.sink.delivered[0] && "capsCrossed" in at.sink.delivered[0]).toBe(false);
    const over = setup({ script: [scriptedText("over", { usage })] });
    await over.scheduler().saveRoutine(routineOf({ cap: { usd: 0.000009, onExceeded: "warn" } }));
    const [overRun] = (await over.scheduler().tick()).ran;
    expect(overRun).toMatchObject({
      state: "completed",
      costMicros: 10,
      capsCrossed: ["perTurnUsd"],
      delivery: { capsCrossed: ["perTurnUsd"] },
    });
    expect(over.sink.delivered[0]?.capsCrossed).toEqual(["perTurnUsd"]);
  });
});

describe("schedule: hostile routine data is refused with typed errors before anything is stored", () => {
  const bad: [string, Partial<Routine>][] = [
    ["a cron field out of range", { schedule: { cron: "61 * * * *", timeZone: "UTC" } }],
    ["not a cron expression", { schedule: { cron: "every night", timeZone: "UTC" } }],
    ["a cron that never fires", { schedule: { cron: "0 0 30 2 *", timeZone: "UTC" } }],
    ["a cron that fires every second", { schedule: { cron: "* * * * * *", timeZone: "UTC" } }],
    ["an unknown time zone", { schedule: { cron: "0 22 * * *", timeZone: "Mars/Olympus" } }],
    ["a goal one character over 8,000", { goal: "g".repeat(8001) }],
    ["a destination the sink does not serve", { destination: "attacker-webhook" }],
    ["a profile the runner does not have", { profile: "admin" }],
    ["a batch routine without the jobs seam", { execution: "job" }],
  ];
  for (const [name, over] of bad) {
    it(name, async () => {
      const h = setup();
      await expect(h.scheduler().saveRoutine(routineOf(over))).rejects.toBeInstanceOf(
        ValidationError,
      );
      expect((await h.stores.routines.list(SCOPE)).items).toEqual([]);
    });
  }

  it("at the limits: a goal of 8,000 characters and a once-a-minute cron are kept", async () => {
    const h = setup();
    await h
      .scheduler()
      .saveRoutine(
        routineOf({ goal: "g".repeat(8000), schedule: { cron: "* * * * *", timeZone: "UTC" } }),
      );
    expect((await h.stores.routines.list(SCOPE)).items).toHaveLength(1);
  });

  it("a routine stored with a cron this build cannot read is reported, not run, and does not stop the others", async () => {
    const h = setup({ script: [scriptedText("fine", { usage })] });
    await h.stores.routines.put(
      routineOf({ id: "broken", schedule: { cron: "not cron", timeZone: "UTC" } }),
    );
    await h.scheduler().saveRoutine(routineOf());
    const report = await h.scheduler().tick();
    expect(report.errors).toEqual([{ routineId: "broken", kind: "invalid_schedule" }]);
    expect(report.ran).toHaveLength(1);
  });
});

describe("schedule: the batch path (submit, then collect under a fresh claim)", () => {
  it("a job routine's slot is submitted once, collected while pending, then delivered; never submitted twice", async () => {
    const jobs = new FakeJobs(2);
    const h = setup({ config: { jobs } });
    const [a, b] = [h.scheduler("host-a"), h.scheduler("host-b")];
    await a.saveRoutine(routineOf({ execution: "job" }));
    const first = await a.tick();
    expect(first.submitted.map((r) => [r.state, r.submission?.jobId])).toEqual([
      ["submitted", "job-1"],
    ]);
    expect(jobs.submitted).toEqual(["daily-summary@2026-01-01T01:00:00.000Z#1"]);
    h.clock.advance(60_000);
    const pending = await Promise.all([a.tick(), b.tick()]);
    // Each collection holds the run under its own claim; a second host may collect again after the first put it back.
    expect(
      jobs.collects >= 1 && jobs.collects <= 2,
      "collected under a claim, never more than once per host",
    ).toBe(true);
    expect(
      pending
        .flatMap((r) => r.submitted)
        .every((r) => r.state === "submitted" && r.submission?.jobId === "job-1"),
    ).toBe(true);
    h.clock.advance(60_000);
    jobs.pendingFor = 0;
    const done = await b.tick();
    expect(done.ran.map((r) => [r.state, r.costMicros, r.owner])).toEqual([
      ["completed", 40, "host-b"],
    ]);
    expect(h.sink.delivered.map((d) => d.text)).toEqual(["Batch summary: 12 appointments."]);
    expect(jobs.submitted, "never submitted again").toHaveLength(1);
    expect(h.model.calls, "no governed turn ran").toBe(0);
    expect(
      new Set(jobs.collectedUnder.map((c) => JSON.stringify(c))),
      "collect is given the routine's cap",
    ).toEqual(new Set([JSON.stringify(routineOf().cap)]));
  });

  it("a job the batch client refused (unpriced tier, over a block cap) is failed (budget_stopped) at zero cost: never collected, nothing delivered", async () => {
    for (const reason of ["unpriced", "cap"] as const) {
      const jobs = new FakeJobs(0);
      jobs.refuse = reason;
      const h = setup({ config: { jobs } });
      const a = h.scheduler("host-a");
      await a.saveRoutine(routineOf({ execution: "job" }));
      const first = await a.tick();
      expect(first.ran.map((r) => [r.state, r.reason, r.costMicros, r.submission])).toEqual([
        ["failed", "budget_stopped", 0, undefined],
      ]);
      h.clock.advance(60_000);
      expect((await a.tick()).ran).toEqual([]);
      expect([
        jobs.submitted.length,
        jobs.collects,
        h.sink.delivered.length,
        h.model.calls,
      ]).toEqual([1, 0, 0, 0]);
    }
  });
});
