import { join } from "node:path";
import type { OutputSink, RoutineInput } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { repeatingTextModel } from "@alma-harness/loop/testing";
import { cachedTurns, createRoutineScheduler } from "@alma-harness/schedule";
import { InjectedStoreFault, tapStore } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import {
  hasRoutineStores,
  memory,
  postgres,
  type Runtime,
  type RuntimeConfig,
  sqlite,
} from "../src/index.js";
import { scratch } from "./store-kit.js";
import { DEPLOYMENT } from "./workers/deployment.js";

const URL_ = process.env.ALMA_TEST_DATABASE_URL;
const SCOPE = { org: "clinic-faults", uid: "back-office" };
const SLOT1 = Date.UTC(2026, 0, 1, 1);
const { dir, schemas } = scratch("alma-rt-routine-faults");

const ROUTINE: RoutineInput = {
  scope: SCOPE,
  id: "nightly",
  goal: "Summarize the day.",
  intent: { tier: "balanced", sensitivity: "internal" },
  schedule: { cron: "0 22 * * *", timeZone: "America/Sao_Paulo" },
  cap: 0.01,
  destination: "staff",
  createdAt: Date.UTC(2026, 0, 1),
};
const CALLS = [
  "routineRuns.reconcileInterrupted",
  "routines.scan",
  "routineRuns.latest",
  "routineRuns.claim",
  "routineRuns.finish",
];

let n = 0;
const open: Record<string, ((config: RuntimeConfig) => Promise<Runtime>) | undefined> = {
  memory: async (config) => memory(config),
  sqlite: async (config) => {
    n += 1;
    return sqlite({ ...config, store: { path: join(dir, `db-${n}`, "alma.db") } });
  },
  postgres: URL_
    ? async (config) => {
        n += 1;
        const schema = `t_rt_rfaults_${process.pid}_${Date.now().toString(36)}_${n}`;
        schemas.push(schema, `${schema}_root`);
        return postgres({
          ...config,
          trailKey: "routine-faults-test-key-of-the-deployment",
          store: { connectionString: URL_, schema, rootSchema: `${schema}_root`, migrate: true },
        });
      }
    : undefined,
};

/** A tick whose `failAt`-th routine-store call fails `mode`, then two recovery ticks (now, and past the interrupted bound). */
async function faultedSlot(
  make: (config: RuntimeConfig) => Promise<Runtime>,
  failAt: number,
  mode: "before" | "after",
) {
  const clock = new ManualClock(SLOT1 + 60_000);
  const model = repeatingTextModel("summary");
  let deliveries = 0;
  const sink: OutputSink = {
    destinations: ["staff"],
    deliver: async () => {
      deliveries += 1;
    },
  };
  const rt = await make({
    clients: [model],
    policy: {
      resolve: () => ({ clientId: "fake", model: "demo", maxOutputTokens: 256, cache: false }),
    },
    prompt: "nightly",
    clock,
    ...DEPLOYMENT,
  });
  try {
    const stores = rt.stores;
    if (!hasRoutineStores(stores)) throw new Error("no routine stores");
    let count = 0;
    const tap = (name: string) => async (method: string, call: () => Promise<unknown>) => {
      count += 1;
      const me = count;
      if (me === failAt && mode === "before") throw new InjectedStoreFault("before", name, method);
      const out = await call();
      if (me === failAt && mode === "after") throw new InjectedStoreFault("after", name, method);
      return out;
    };
    await stores.routines.put(ROUTINE);
    const scheduler = createRoutineScheduler({
      routines: tapStore(stores.routines, tap("routines")),
      runs: tapStore(stores.routineRuns, tap("routineRuns")),
      sink,
      turns: cachedTurns((caps) => rt.runnerFor(caps)),
      owner: "host-a",
      clock,
    });
    await scheduler.tick();
    await scheduler.tick();
    clock.advance(31 * 60_000);
    await scheduler.tick();
    return {
      calls: model.calls,
      deliveries,
      run: await stores.routineRuns.get(SCOPE, "nightly", SLOT1),
    };
  } finally {
    await rt.close();
  }
}

for (const [name, make] of Object.entries(open)) {
  describe.skipIf(!make)(
    `runtime: a routine-store fault at each call of a tick on ${name}${make ? "" : " (skipped: set ALMA_TEST_DATABASE_URL)"}`,
    () => {
      for (let at = 1; at <= CALLS.length; at++) {
        for (const mode of ["before", "after"] as const) {
          it(`${CALLS[at - 1]} fails ${mode}: one turn at most, one delivery at most, the slot recorded and not running`, async () => {
            const { calls, deliveries, run } = await faultedSlot(
              make as (config: RuntimeConfig) => Promise<Runtime>,
              at,
              mode,
            );
            expect(calls).toBeLessThanOrEqual(1);
            expect(deliveries).toBeLessThanOrEqual(1);
            expect(run?.state).toBeDefined();
            expect(run?.state).not.toBe("running");
            if (run?.state === "completed") expect(deliveries).toBe(1);
            if (
              CALLS[at - 1] === "routineRuns.claim" ||
              (mode === "after" && CALLS[at - 1] === "routineRuns.finish")
            )
              expect(run?.state).toBe("completed");
            if (mode === "before" && CALLS[at - 1] === "routineRuns.finish")
              expect(run).toMatchObject({
                state: "reconciliation_required",
                reason: "interrupted",
              });
          });
        }
      }
    },
  );
}
