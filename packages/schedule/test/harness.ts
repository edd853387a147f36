import { createConversationRunner } from "@alma-harness/conversation";
import type { OutputSink, PriceTable, Routine, RoutineOutput, Scope } from "@alma-harness/core";
import {
  inMemoryStores,
  ManualClock,
  RecordingAuditLog,
  SequentialIds,
} from "@alma-harness/core/testing";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";
import {
  cachedTurns,
  createRoutineScheduler,
  type RoutineJobs,
  type RoutineSchedulerConfig,
} from "../src/index.js";

/** Input is free and output costs one micro-dollar a token, so a call's worst case is its `maxOutputTokens` in micro-dollars. */
export const PRICES: PriceTable = {
  version: "prices-1",
  models: { "fake-main": { rates: { input: 0, output: 1 } } },
};
export const MAX_OUTPUT = 1000;
export const SCOPE: Scope = Object.freeze({ org: "clinic-a", uid: "nightly" });
/** 2026-01-01T00:00Z; the routine below fires at 22:00 in São Paulo, 01:00Z. */
export const T0 = Date.UTC(2026, 0, 1);
export const SLOT1 = Date.UTC(2026, 0, 1, 1);
export const DAY = 86_400_000;

export function routineOf(over: Partial<Routine> = {}): Routine {
  return {
    scope: SCOPE,
    id: "daily-summary",
    goal: "Summarize today's appointments for the clinic staff.",
    intent: { tier: "balanced", sensitivity: "internal", task: "nightly-summary" },
    schedule: { cron: "0 22 * * *", timeZone: "America/Sao_Paulo" },
    cap: { usd: 0.5, onExceeded: "block" },
    destination: "staff-inbox",
    catchUp: false,
    execution: "turn",
    enabled: true,
    createdAt: T0,
    ...over,
  };
}

/** An output sink that keeps what it was given (deduplicated by delivery id, as the contract asks); `failNext` makes the next delivery throw. */
export class RecordingSink implements OutputSink {
  readonly destinations = ["staff-inbox"];
  readonly delivered: RoutineOutput[] = [];
  calls = 0;
  #fail = 0;
  failNext(n = 1): void {
    this.#fail = n;
  }
  async deliver(output: RoutineOutput): Promise<void> {
    this.calls += 1;
    if (this.#fail > 0) {
      this.#fail -= 1;
      throw new Error("the staff inbox is down");
    }
    if (!this.delivered.some((d) => d.deliveryId === output.deliveryId))
      this.delivered.push(output);
  }
}

/** A batch-job seam double: jobs complete after `pendingFor` collections. */
export class FakeJobs implements RoutineJobs {
  readonly submitted: string[] = [];
  /** The cap each `collect` was given. */
  readonly collectedUnder: unknown[] = [];
  collects = 0;
  /** Answer `refused` (the batch client's zero-cost preflight) instead of a job id. */
  refuse: "unpriced" | "cap" | undefined;
  constructor(public pendingFor = 1) {}
  async submit(work: {
    readonly customId: string;
  }): Promise<import("../src/index.js").RoutineJobSubmission> {
    this.submitted.push(work.customId);
    if (this.refuse) return { status: "refused", reason: this.refuse };
    return { jobId: `job-${this.submitted.length}` };
  }
  async collect(
    job: import("../src/index.js").RoutineJobRef,
  ): Promise<import("../src/index.js").RoutineJobResult> {
    this.collectedUnder.push(job.cap);
    this.collects += 1;
    if (this.collects <= this.pendingFor) return { status: "pending" };
    return {
      status: "completed",
      text: "Batch summary: 12 appointments.",
      costMicros: 40,
      capsCrossed: [],
    };
  }
}

export interface SetupOptions {
  readonly script?: ScriptedResponse[];
  readonly start?: number;
  readonly config?: Partial<RoutineSchedulerConfig>;
}

/** One host's stores, model and clock; `scheduler(owner)` builds a scheduler as one process would (several share the stores). */
export function setup(opts: SetupOptions = {}) {
  const stores = inMemoryStores({ audit: new RecordingAuditLog() });
  const model = new FakeModelClient(opts.script ?? []);
  const clock = new ManualClock(opts.start ?? SLOT1 + 60_000);
  const ids = new SequentialIds();
  const sink = new RecordingSink();
  const turns = cachedTurns((caps) =>
    createConversationRunner({
      stores,
      clients: [model],
      policy: {
        resolve: () => ({
          clientId: "fake",
          model: "fake-main",
          maxOutputTokens: MAX_OUTPUT,
          cache: false,
        }),
      },
      prompt: "You write the clinic's nightly summary.",
      tools: [],
      prices: PRICES,
      policyVersion: "policy-1",
      priceVersion: "prices-1",
      configRevision: "rev-1",
      resultRetentionMs: DAY,
      runTimeoutMs: 120_000,
      maxCalls: 4,
      maxInputChars: 10_000,
      clock,
      ids,
      caps,
    }),
  );
  const scheduler = (owner = "host-a", config: Partial<RoutineSchedulerConfig> = {}) =>
    createRoutineScheduler({
      routines: stores.routines,
      runs: stores.routineRuns,
      sink,
      turns,
      owner,
      clock,
      ...opts.config,
      ...config,
    });
  return { stores, model, clock, sink, turns, scheduler };
}
