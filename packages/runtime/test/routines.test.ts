import { join } from "node:path";
import type { OutputSink, RoutineOutput, Routine } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { repeatingTextModel } from "@alma-harness/loop/testing";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { describe, expect, it } from "vitest";
import { routineOf } from "@alma-harness/testing";
import { memory, postgres, type Runtime, routineScheduler, sqlite } from "../src/index.js";
import { runWorker } from "./process-kit.js";
import { scratch } from "./store-kit.js";
import { DEPLOYMENT } from "./workers/deployment.js";

const URL_ = process.env.ALMA_TEST_DATABASE_URL;
const SCOPE = { org: "clinic-rt", uid: "nightly" };
const T0 = Date.UTC(2026, 0, 1);
const SLOT1 = Date.UTC(2026, 0, 1, 1);
const DAY = 86_400_000;
const { dir, schemas } = scratch("alma-rt-routines");

const routine = (over: Partial<Routine> = {}): Routine =>
  routineOf("daily-summary", {
    scope: SCOPE,
    goal: "Summarize today's appointments.",
    intent: { tier: "balanced", sensitivity: "internal" },
    cap: { usd: 0.01, onExceeded: "block" },
    catchUp: true,
    execution: "turn",
    createdAt: T0,
    ...over,
  });

function host(clock: ManualClock) {
  const model = repeatingTextModel("the day's summary");
  const delivered: RoutineOutput[] = [];
  const sink: OutputSink = {
    destinations: ["staff-inbox"],
    deliver: async (o) => void delivered.push(o),
  };
  const config = {
    clients: [model],
    policy: {
      resolve: () => ({
        clientId: "fake",
        model: "demo",
        maxOutputTokens: 256,
        cache: false as const,
      }),
    },
    prompt: "nightly",
    clock,
    ...DEPLOYMENT,
  };
  return { config, sink, delivered, calls: () => model.calls };
}

/** The scheduler over each composition: one run per slot under eight concurrent ticks, missed and late slots, the cap. */
async function compositionChecks(
  open: (config: ReturnType<typeof host>["config"]) => Promise<Runtime>,
) {
  const clock = new ManualClock(SLOT1 + 2 * DAY + 60_000);
  const h = host(clock);
  const rt = await open(h.config);
  try {
    const hosts = Array.from({ length: 8 }, (_, i) =>
      routineScheduler(rt, { sink: h.sink, owner: `host-${i}`, clock }),
    );
    await hosts[0]?.saveRoutine(routine());
    await hosts[0]?.saveRoutine(routine({ id: "no-catch-up", catchUp: false }));
    const reports = await Promise.all(hosts.map((s) => s.tick()));
    const ran = reports
      .flatMap((r) => r.ran)
      .map((r) => `${r.routineId}@${r.slot - SLOT1}:${r.state}`);
    expect(ran.sort()).toEqual(
      [
        "daily-summary@0:completed",
        `daily-summary@${DAY}:completed`,
        `daily-summary@${2 * DAY}:completed`,
        `no-catch-up@${2 * DAY}:completed`,
      ].sort(),
    );
    expect(
      reports
        .flatMap((r) => r.missed)
        .map((r) => `${r.routineId}@${r.slot - SLOT1}`)
        .sort(),
    ).toEqual(["no-catch-up@0", `no-catch-up@${DAY}`]);
    expect(h.calls(), "one turn per slot").toBe(4);
    expect(h.delivered).toHaveLength(4);
    const runs = (await hosts[0]?.stores.routineRuns.list(SCOPE, { limit: 100 }))?.items ?? [];
    expect(runs).toHaveLength(6);
    const one = runs.find((r) => r.state === "completed");
    expect(one?.costMicros).toBeGreaterThan(0);
  } finally {
    await rt.close();
  }
}

describe("runtime: routines over every composition", () => {
  it("memory", () => compositionChecks(async (config) => memory(config)));
  it("sqlite", () =>
    compositionChecks(async (config) =>
      sqlite({ ...config, store: { path: join(dir, "a", "alma.db") } }),
    ));
  it.skipIf(!URL_)("postgres", () =>
    compositionChecks(async (config) => {
      const schema = `t_rt_routines_${process.pid}_${Date.now().toString(36)}`;
      schemas.push(schema, `${schema}_root`);
      return postgres({
        ...config,
        trailKey: "routines-test-key-of-the-deployment",
        store: { connectionString: URL_, schema, rootSchema: `${schema}_root`, migrate: true },
      });
    }),
  );
});

describe.skipIf(!URL_)("runtime: two host processes on one PostgreSQL fire the same slots", () => {
  it("each slot is run once: one claim, one turn, one delivery, across both processes", async () => {
    const schema = `t_rt_routines_mp_${process.pid}_${Date.now().toString(36)}`;
    schemas.push(schema, `${schema}_root`);
    const stores = await createPostgresStores({
      connectionString: URL_,
      schema,
      rootSchema: `${schema}_root`,
      migrate: true,
    });
    // Five late slots and one on time: each process tries to claim all six.
    await stores.routines.put(routine());
    await stores.close();
    const now = SLOT1 + 5 * DAY + 60_000;
    const startAt = Date.now() + 4000;
    const run = (owner: string) =>
      runWorker<{ owner: string; ran: [number, string][]; calls: number; delivered: string[] }>(
        "routine-worker.ts",
        { schema, rootSchema: `${schema}_root`, owner, now, startAt },
      );
    const lines = await Promise.all([run("proc-a"), run("proc-b")]);
    const slots = lines.flatMap((l) => l.ran.map(([slot]) => slot)).sort((a, b) => a - b);
    expect(slots).toEqual([0, 1, 2, 3, 4, 5].map((d) => SLOT1 + d * DAY));
    expect(
      lines.reduce((n, l) => n + l.calls, 0),
      "one model call per slot across both processes",
    ).toBe(6);
    expect(new Set(lines.flatMap((l) => l.delivered)).size).toBe(6);
    expect(lines.flatMap((l) => l.delivered)).toHaveLength(6);
    const check = await createPostgresStores({
      connectionString: URL_,
      schema,
      rootSchema: `${schema}_root`,
    });
    try {
      const runs = (await check.routineRuns.list(SCOPE, { limit: 100 })).items;
      expect(runs.map((r) => r.state)).toEqual(Array(6).fill("completed"));
    } finally {
      await check.close();
    }
  }, 60_000);
});
