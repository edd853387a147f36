import { hostname } from "node:os";
import type {
  BudgetCapsInput,
  Clock,
  OutputSink,
  Routine,
  RoutineInput,
  RoutineOutput,
  Scope,
} from "@alma-harness/core";
import {
  intervalTrigger,
  type RoutineJobs,
  type RoutineScheduler,
  type TickReport,
} from "@alma-harness/schedule";
import { routineJobs, routineScheduler, runtimeModelJobs } from "@alma-harness/runtime";
import type { Runtime } from "@alma-harness/runtime";
import type { Clinic, ClinicDesk } from "../agent/clinics.js";
import type { ModelSetup } from "../models/select.js";

/** The destination the example routines deliver to: each clinic's staff inbox. */
export const STAFF_INBOX = "clinic-staff";
/** The scope a clinic's routines run in: the clinic's own back office, never a patient's. */
export const ROUTINE_UID = "back-office";
export const NIGHTLY_ID = "nightly-day-summary";
const KEPT_PER_CLINIC = 100;

/** One delivered result, as the console shows it. */
export interface StaffMessage {
  readonly deliveryId: string;
  readonly org: string;
  readonly routineId: string;
  readonly slot: number;
  readonly text: string;
  readonly costMicros: number;
  readonly capsCrossed?: readonly string[];
  readonly late?: true;
}

/**
 * The example host's `OutputSink`: the clinic staff's inbox, in memory, the last hundred per
 * clinic, deduplicated by delivery id (a sink must be: a repeated delivery id delivers once).
 * A real host delivers to its own channel (an email, a staff chat) the same way.
 */
export class StaffInbox implements OutputSink {
  readonly destinations = [STAFF_INBOX];
  readonly #byOrg = new Map<string, StaffMessage[]>();

  async deliver(o: RoutineOutput): Promise<void> {
    const list = this.#byOrg.get(o.scope.org) ?? [];
    if (list.some((m) => m.deliveryId === o.deliveryId)) return;
    list.unshift({
      deliveryId: o.deliveryId,
      org: o.scope.org,
      routineId: o.routineId,
      slot: o.slot,
      text: o.text,
      costMicros: o.costMicros,
      ...(o.capsCrossed ? { capsCrossed: o.capsCrossed } : {}),
      ...(o.late ? { late: true as const } : {}),
    });
    this.#byOrg.set(o.scope.org, list.slice(0, KEPT_PER_CLINIC));
  }

  messages(org?: string): readonly StaffMessage[] {
    if (org !== undefined) return this.#byOrg.get(org) ?? [];
    return [...this.#byOrg.values()].flat();
  }
}

export function routineScope(org: string): Scope {
  return Object.freeze({ org, uid: ROUTINE_UID });
}

/** The system prompt of a nightly batch item (a batch item has no tools: it writes from its prompt alone). */
export const NIGHTLY_SYSTEM =
  "You write the clinic staff's end-of-day summary: three short lines, plain text, no patient identifiers beyond what the request names.";
/** A nightly summary's output ceiling (lowers the route's, never raises it). */
export const NIGHTLY_MAX_OUTPUT_TOKENS = 400;

/**
 * The example routine: every night at 22:00 (São Paulo), summarize each clinic's day for its
 * staff, under its own cap of five cents, at the front desk's sensitivity (the day names patients).
 * `execution: "job"` (the default): one provider batch job per clinic and night, at the batch price,
 * submitted on the slot's tick and collected on a later one; `"turn"` where the provider has no
 * batch API (OpenRouter, a local server): one governed turn.
 */
export function nightlyRoutine(
  clinic: Clinic,
  createdAt: number,
  execution: Routine["execution"] = "job",
): RoutineInput {
  return {
    scope: routineScope(clinic.org),
    id: NIGHTLY_ID,
    goal: `Summarize today's day at ${clinic.name} for the staff: appointments booked and cancelled, and anything left to follow up. Write three short lines.`,
    intent: { tier: "balanced", sensitivity: "confidential", task: "nightly-summary" },
    schedule: { cron: "0 22 * * *", timeZone: "America/Sao_Paulo" },
    cap: { usd: 0.05, onExceeded: "block" },
    destination: STAFF_INBOX,
    catchUp: false,
    execution,
    enabled: true,
    createdAt,
  };
}

/** The host's routines: the scheduler, its inbox, and the tick on an interval that graceful shutdown stops. */
export interface HostRoutines {
  readonly scheduler: RoutineScheduler & {
    readonly stores: ReturnType<typeof routineScheduler>["stores"];
  };
  readonly inbox: StaffInbox;
  /** The last tick's report (null before the first). */
  lastTick(): TickReport | null;
  /** Runs one tick now (what the interval runs; the console's "tick now"). */
  tick(): Promise<TickReport>;
  /** Starts the interval tick; `stop` clears it and waits for a tick in progress. */
  start(everyMs: number, onError?: (error: unknown) => void): void;
  stop(): Promise<void>;
}

/**
 * The nightly routine's jobs: `routineJobs` over the runtime's own stores and trail key (so a job's
 * items count toward the same session and clinic-day caps as the turns), the provider's batch
 * transport and policy, the host's caps with each routine's cap as the job's `perTurnUsd`.
 */
export function nightlyJobs(
  runtime: Runtime,
  models: ModelSetup,
  caps: BudgetCapsInput | undefined,
  desk: ClinicDesk,
  clock?: Clock,
): RoutineJobs | undefined {
  const batch = models.batch;
  if (!batch) return undefined;
  const base = {
    prices: models.prices,
    policyVersion: `routing-${models.provider}-batch-1`,
    transports: [batch.transport],
    policy: batch.policy,
    ...(clock ? { clock } : {}),
  };
  return routineJobs((cap) => runtimeModelJobs(runtime, { ...base, caps: { ...caps, ...cap } }), {
    system: NIGHTLY_SYSTEM,
    maxOutputTokens: NIGHTLY_MAX_OUTPUT_TOKENS,
    input: (work) => nightlyInput(desk, work),
  });
}

const DAY_IN_CLINIC = new Intl.DateTimeFormat("en-CA", {
  timeZone: "America/Sao_Paulo",
  year: "numeric",
  month: "2-digit",
  day: "2-digit",
});

/** A nightly item's message: the goal, then the clinic's appointments of the slot's day (São Paulo), one line each. */
export function nightlyInput(
  desk: ClinicDesk,
  work: { readonly scope: Scope; readonly goal: string; readonly slot: number },
): string {
  const day = DAY_IN_CLINIC.format(work.slot);
  const lines = desk
    .dayOf(work.scope.org, day)
    .map((a) => `- ${a.slotId.slice(11)} ${a.patientId} ${a.status}`);
  return `${work.goal}\n\nThe day's appointments (${day}):\n${lines.length > 0 ? lines.join("\n") : "(none)"}`;
}

export async function hostRoutines(
  runtime: Runtime,
  clinics: readonly Clinic[],
  clock: { now(): number },
  jobs?: RoutineJobs,
): Promise<HostRoutines> {
  const inbox = new StaffInbox();
  const scheduler = routineScheduler(runtime, {
    sink: inbox,
    owner: `${hostname()}:${process.pid}`,
    clock,
    ...(jobs ? { jobs } : {}),
  });
  const execution = jobs ? "job" : "turn";
  for (const clinic of clinics) {
    // Saved once: a later start keeps the stored routine (and its createdAt), so slots never re-fire;
    // only its execution follows the provider (a batch API or none).
    const stored = await scheduler.stores.routines.get(routineScope(clinic.org), NIGHTLY_ID);
    if (!stored) await scheduler.saveRoutine(nightlyRoutine(clinic, clock.now(), execution));
    else if (stored.execution !== execution) await scheduler.saveRoutine({ ...stored, execution });
  }
  let last: TickReport | null = null;
  let trigger: ReturnType<typeof intervalTrigger> | undefined;
  const tick = async () => {
    last = await scheduler.tick();
    return last;
  };
  return {
    scheduler,
    inbox,
    lastTick: () => last,
    tick,
    start(everyMs, onError) {
      if (trigger) return;
      trigger = intervalTrigger({ everyMs, clock: () => clock.now() });
      trigger.start(async () => {
        try {
          await tick();
        } catch (error) {
          onError?.(error);
        }
      });
    },
    async stop() {
      await trigger?.stop();
    },
  };
}
