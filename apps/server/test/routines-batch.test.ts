import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routineSessionId } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { describe, expect, it } from "vitest";
import { CLINICS } from "../src/agent/clinics.js";
import { DEMO_PRICES } from "../src/models/demo.js";
import { demoSetup } from "../src/models/select.js";
import { NIGHTLY_ID, routineScope } from "../src/routines/nightly.js";
import { ANA, fakeSetup, hostPerTest, SUNRISE } from "./helpers.js";

const startHost = hostPerTest();
/** Tonight's 22:00 in São Paulo (01:00 UTC). */
const SLOT = Date.UTC(2026, 11, 2, 1);

describe("host: the nightly routine runs as a provider batch job", () => {
  it("submitted on its tick, pending on the next, collected on a later one: each clinic's inbox gets its summary once, at the batch price", async () => {
    // The host starts in the clinic's morning; two appointments are booked and one of them cancelled that day.
    const clock = new ManualClock(Date.UTC(2026, 11, 1, 8));
    const models = demoSetup();
    const t = await startHost({ models, clock });
    const routines = t.host.context.routines;
    const desk = t.host.context.desk;
    expect(desk.book(SUNRISE, ANA, "2026-12-01T10:30", "k1")).toMatchObject({ ok: true });
    const second = desk.book(SUNRISE, "p-1002", "2026-12-01T14:00", "k2");
    expect(second).toMatchObject({ ok: true });
    if (second.ok)
      expect(desk.cancel(SUNRISE, "p-1002", second.value.id)).toMatchObject({ ok: true });
    clock.set(SLOT + 60_000);
    const first = await routines.tick();
    expect(first.ran).toEqual([]);
    expect(first.submitted.map((r) => [r.scope.org, r.routineId, r.slot, r.state]).sort()).toEqual(
      CLINICS.map((c) => [c.org, NIGHTLY_ID, SLOT, "submitted"]).sort(),
    );
    expect(models.batch.transport.submitted, "one job per clinic").toBe(CLINICS.length);

    clock.advance(60_000);
    const pending = await routines.tick();
    expect([pending.ran, pending.submitted.length], "the demo batch is still running").toEqual([
      [],
      CLINICS.length,
    ]);
    expect(routines.inbox.messages()).toEqual([]);

    clock.advance(60_000);
    const third = await routines.tick();
    expect(third.ran.map((r) => r.state)).toEqual(CLINICS.map(() => "completed"));
    clock.advance(60_000);
    const fourth = await routines.tick();
    expect([fourth.ran, fourth.submitted]).toEqual([[], []]);

    expect(models.batch.transport.submitted, "never submitted again").toBe(CLINICS.length);
    expect(t.calls(), "no streaming turn ran").toBe(0);
    const inbox = routines.inbox.messages(SUNRISE);
    expect(inbox).toHaveLength(1);
    expect(inbox[0]).toMatchObject({
      routineId: NIGHTLY_ID,
      slot: SLOT,
      deliveryId: `${NIGHTLY_ID}@${new Date(SLOT).toISOString()}#1`,
    });
    expect(inbox[0]?.text).toMatch(
      /^Offline demo summary \(batch job\)\. Asked: Summarize today's day at .+ for the staff: Given: 1 booked, 1 cancelled\./,
    );
    expect(routines.inbox.messages("harbor-dental")[0]?.text).toMatch(
      /Given: 0 booked, 0 cancelled\./,
    );

    // The settlement is the governed receipt at the demo model's batch rates ($1.5/$7.5 per million, half the standard).
    const scope = routineScope(SUNRISE);
    const settled = (
      await t.host.context.runtime.stores.settlements.list(scope, {
        sessionId: routineSessionId(NIGHTLY_ID, SLOT),
      })
    ).items;
    expect(settled).toHaveLength(1);
    const receipt = settled[0]?.receipt;
    const usage = receipt?.usage;
    expect(usage?.serviceTier).toBe("batch");
    const batch = DEMO_PRICES.models["offline-demo"]?.tiers?.batch;
    expect(batch).toEqual({ input: 1.5, output: 7.5 });
    const expected = (usage?.inputTokens ?? 0) * 1.5 + (usage?.outputTokens ?? 0) * 7.5;
    expect(receipt?.usdMicros).toBe(Math.ceil(expected));
    expect(receipt?.usdMicros).toBeGreaterThan(0);
    expect(inbox[0]?.costMicros).toBe(receipt?.usdMicros);
    const run = (await routines.scheduler.stores.routineRuns.list(scope, { limit: 10 })).items[0];
    expect(run).toMatchObject({
      state: "completed",
      costMicros: receipt?.usdMicros,
      sessionId: routineSessionId(NIGHTLY_ID, SLOT),
    });
  });

  it("a provider without a batch API keeps the routine a turn; a restart with one switches the stored routine to a job, its createdAt kept", async () => {
    const home = mkdtempSync(join(tmpdir(), "alma-host-switch-"));
    try {
      const store = { home, databaseUrl: undefined };
      const first = await startHost({
        models: fakeSetup(),
        store,
        clock: new ManualClock(SLOT - 7_200_000),
      });
      const before = await first.host.context.routines.scheduler.stores.routines.get(
        routineScope(SUNRISE),
        NIGHTLY_ID,
      );
      expect(before).toMatchObject({ execution: "turn", createdAt: SLOT - 7_200_000 });
      await first.close();
      const again = await startHost({
        models: demoSetup(),
        store,
        clock: new ManualClock(SLOT - 3_600_000),
      });
      const after = await again.host.context.routines.scheduler.stores.routines.get(
        routineScope(SUNRISE),
        NIGHTLY_ID,
      );
      expect(after).toMatchObject({ execution: "job", createdAt: SLOT - 7_200_000 });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
