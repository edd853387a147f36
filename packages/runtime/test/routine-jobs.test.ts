import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ScriptedBatchTransport, succeeded } from "@alma-harness/batch/testing";
import type {
  ModelClient,
  OutputSink,
  PriceTable,
  Routine,
  RoutineOutput,
} from "@alma-harness/core";
import { routineSessionId } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import type { RoutineWork } from "@alma-harness/schedule";
import { afterAll, describe, expect, it } from "vitest";
import { routineOf } from "@alma-harness/testing";
import {
  memory,
  type Runtime,
  routineJobId,
  routineJobs,
  routineScheduler,
  runtimeModelJobs,
  sqlite,
} from "../src/index.js";
import { DEPLOYMENT } from "./workers/deployment.js";

const SCOPE = { org: "clinic-rj", uid: "nightly" };
const T0 = Date.UTC(2026, 0, 1);
const SLOT1 = Date.UTC(2026, 0, 1, 1);
const KEY = "routine-jobs-test-trail-key-of-the-deployment";
/** The demo model at $1/$2 per million, its batch tier at half: $0.5/$1. */
const PRICES: PriceTable = {
  version: "p1",
  models: { demo: { rates: { input: 1, output: 2 }, tiers: { batch: { input: 0.5, output: 1 } } } },
};
const UNPRICED: PriceTable = {
  version: "p1",
  models: { demo: { rates: { input: 1, output: 2 } } },
};
const dir = mkdtempSync(join(tmpdir(), "alma-rt-routine-jobs-"));
let files = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const routine = (over: Partial<Routine> = {}): Routine =>
  routineOf("clinic-day", {
    scope: SCOPE,
    goal: "Summarize the clinic's day.",
    intent: { tier: "balanced", sensitivity: "internal" },
    cap: { usd: 0.01, onExceeded: "block" },
    catchUp: false,
    execution: "job",
    createdAt: T0,
    ...over,
  });

/** A streaming model that must never be called on the job path. */
const NEVER: ModelClient = {
  id: "stream",
  provider: "fake",
  validate: () => undefined,
  stream: () => {
    throw new Error("a routine job never streams a turn");
  },
};

type Open = (config: Parameters<typeof memory>[0]) => Runtime;
const KINDS: readonly [string, Open][] = [
  ["memory", (config) => memory(config)],
  [
    "sqlite",
    (config) =>
      sqlite({ ...config, store: { path: join(dir, `f${++files}`, "alma.db"), commits: "each" } }),
  ],
];

function host(open: Open, prices: PriceTable, input?: (work: RoutineWork) => string) {
  const clock = new ManualClock(SLOT1 + 60_000);
  const transport = new ScriptedBatchTransport({ id: "demo-batch", now: () => clock.now() });
  const policy = {
    resolve: () => ({
      clientId: "demo-batch",
      model: "demo",
      maxOutputTokens: 256,
      cache: false as const,
    }),
  };
  const rt = open({
    ...DEPLOYMENT,
    prices,
    clients: [NEVER],
    policy: {
      resolve: () => ({
        clientId: "stream",
        model: "demo",
        maxOutputTokens: 256,
        cache: false as const,
      }),
    },
    prompt: "nightly",
    clock,
    trailKey: KEY,
  });
  const stores = rt.stores;
  const base = { prices, policyVersion: "p", transports: [transport], policy, clock };
  const jobs = routineJobs((caps) => runtimeModelJobs(rt, { ...base, caps }), {
    system: "Summarize for the staff.",
    maxOutputTokens: 200,
    ...(input ? { input } : {}),
  });
  const delivered: RoutineOutput[] = [];
  const sink: OutputSink = {
    destinations: ["staff-inbox"],
    deliver: async (o) => void delivered.push(o),
  };
  const scheduler = routineScheduler(rt, { sink, owner: "host-1", clock, jobs });
  return { rt, clock, transport, scheduler, delivered, stores };
}

describe.each(KINDS)("routineJobs over a ModelJobClient (%s)", (_kind, open) => {
  it("submitted on one tick, pending on the next, collected on a later one: settled once at the batch price, delivered once", async () => {
    const h = host(open, PRICES);
    try {
      await h.scheduler.saveRoutine(routine());
      const first = await h.scheduler.tick();
      expect([first.ran, first.submitted.map((r) => r.state)]).toEqual([[], ["submitted"]]);
      expect(h.transport.submissions).toHaveLength(1);
      const sent = h.transport.submissions[0];
      const customId = `clinic-day@${new Date(SLOT1).toISOString()}#1`;
      expect(sent?.jobId).toBe(routineJobId(customId));
      expect(sent?.items[0]?.request.system).toEqual([
        { type: "text", text: "Summarize for the staff." },
      ]);
      expect(sent?.items[0]?.request.messages.at(-1)?.blocks).toEqual([
        { type: "text", text: "Summarize the clinic's day." },
      ]);
      expect(sent?.items[0]?.request.maxOutputTokens).toBe(200);

      h.clock.advance(60_000);
      const second = await h.scheduler.tick();
      expect(
        [second.ran, second.submitted.map((r) => r.state)],
        "pending: back to submitted",
      ).toEqual([[], ["submitted"]]);
      expect(h.delivered).toHaveLength(0);

      h.transport.end(h.transport.batches[0] as string, (item) =>
        succeeded(item.customId, "Nine visits, two follow-ups.", 1_000, 500),
      );
      h.clock.advance(60_000);
      const third = await h.scheduler.tick();
      expect(third.ran.map((r) => r.state)).toEqual(["completed"]);
      h.clock.advance(60_000);
      expect((await h.scheduler.tick()).ran).toEqual([]);

      expect(h.transport.submissions, "submitted once").toHaveLength(1);
      expect(h.delivered.map((o) => o.text)).toEqual(["Nine visits, two follow-ups."]);
      // 1,000 in at $0.5/M and 500 out at $1/M: 1,000 micros (the standard rates would be 2,000).
      const run = (await h.scheduler.stores.routineRuns.list(SCOPE, { limit: 10 })).items[0];
      expect(run).toMatchObject({
        state: "completed",
        costMicros: 1_000,
        sessionId: routineSessionId("clinic-day", SLOT1),
      });
      const settled = (
        await h.stores.settlements.list(SCOPE, { sessionId: routineSessionId("clinic-day", SLOT1) })
      ).items;
      expect(
        settled.map((s) => [s.status, s.receipt.usdMicros, s.receipt.usage.serviceTier]),
      ).toEqual([["applied", 1_000, "batch"]]);
    } finally {
      await h.rt.close();
    }
  });

  it("the host's input is the item's user message (the routine's goal and the host's data for the slot)", async () => {
    const h = host(
      open,
      PRICES,
      (work) => `${work.goal}\nday of ${new Date(work.slot).toISOString()} in ${work.scope.org}`,
    );
    try {
      await h.scheduler.saveRoutine(routine());
      await h.scheduler.tick();
      expect(h.transport.submissions[0]?.items[0]?.request.messages.at(-1)?.blocks).toEqual([
        {
          type: "text",
          text: `Summarize the clinic's day.\nday of ${new Date(SLOT1).toISOString()} in clinic-rj`,
        },
      ]);
    } finally {
      await h.rt.close();
    }
  });

  it("a lost acknowledgement is found again by the provider's listing, never resubmitted", async () => {
    const h = host(open, PRICES);
    try {
      h.transport.next("lose_ack");
      await h.scheduler.saveRoutine(routine());
      expect((await h.scheduler.tick()).submitted.map((r) => r.state)).toEqual(["submitted"]);
      h.transport.end(h.transport.batches[0] as string, (item) =>
        succeeded(item.customId, "Quiet day.", 100, 10),
      );
      h.clock.advance(60_000);
      expect((await h.scheduler.tick()).ran.map((r) => r.state)).toEqual(["completed"]);
      expect(h.transport.submissions).toHaveLength(1);
      expect(h.delivered.map((o) => o.text)).toEqual(["Quiet day."]);
    } finally {
      await h.rt.close();
    }
  });

  it("a lost acknowledgement the listing cannot resolve: reconciliation_required, never resubmitted", async () => {
    const h = host(open, PRICES);
    try {
      h.transport.next("lose_ack");
      h.transport.findable = false;
      await h.scheduler.saveRoutine(routine());
      await h.scheduler.tick();
      h.clock.advance(60_000);
      expect((await h.scheduler.tick()).ran.map((r) => [r.state, r.reason])).toEqual([
        ["reconciliation_required", "job_uncertain"],
      ]);
      h.clock.advance(60_000);
      await h.scheduler.tick();
      expect(h.transport.submissions).toHaveLength(1);
      expect(h.delivered).toHaveLength(0);
    } finally {
      await h.rt.close();
    }
  });

  it("an unpriced batch tier is refused at zero cost: failed (budget_stopped), nothing sent or settled", async () => {
    const h = host(open, UNPRICED);
    try {
      await h.scheduler.saveRoutine(routine());
      expect((await h.scheduler.tick()).ran.map((r) => [r.state, r.reason, r.costMicros])).toEqual([
        ["failed", "budget_stopped", 0],
      ]);
      expect(h.transport.submissions).toHaveLength(0);
      expect((await h.stores.settlements.list(SCOPE)).items).toHaveLength(0);
    } finally {
      await h.rt.close();
    }
  });

  it("the routine's cap bounds the job: a worst case over a block cap is refused at zero cost, at the cap it is submitted", async () => {
    // Worst case: the 200-token ceiling at $1/M = 200 micros of output, plus the input.
    const over = host(open, PRICES);
    try {
      await over.scheduler.saveRoutine(routine({ cap: { usd: 0.0001, onExceeded: "block" } }));
      expect(
        (await over.scheduler.tick()).ran.map((r) => [r.state, r.reason, r.costMicros]),
      ).toEqual([["failed", "budget_stopped", 0]]);
      expect(over.transport.submissions).toHaveLength(0);
    } finally {
      await over.rt.close();
    }
    const under = host(open, PRICES);
    try {
      await under.scheduler.saveRoutine(routine({ cap: { usd: 0.01, onExceeded: "block" } }));
      expect((await under.scheduler.tick()).submitted.map((r) => r.state)).toEqual(["submitted"]);
      expect(under.transport.submissions).toHaveLength(1);
    } finally {
      await under.rt.close();
    }
  });
});
