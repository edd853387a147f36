import {
  type Clock,
  normalizeRoutine,
  type OutputSink,
  type Routine,
  type RoutineClaimResult,
  type RoutineInput,
  type RoutineResolveAction,
  type RoutineRun,
  type RoutineRunStore,
  type RoutineStore,
  routineSessionId,
  type Scope,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import { compileSchedule } from "./cron.js";
import type { RoutineJobs } from "./jobs.js";
import { collectSlot, type RoutineTurns, type RunDeps, runTurnSlot, submitSlot } from "./run.js";

export interface RoutineSchedulerConfig {
  readonly routines: RoutineStore;
  readonly runs: RoutineRunStore;
  /** Where results go; a routine naming a destination it does not serve is refused when saved. */
  readonly sink: OutputSink;
  /** The governed runner for a cap (see `cachedTurns`). */
  readonly turns: RoutineTurns;
  /** The batch path (`execution: "job"`); absent, such a routine is refused when saved. */
  readonly jobs?: RoutineJobs;
  /** This process's claimer id (1–200 printable ASCII): what a run's `owner` says. */
  readonly owner: string;
  /** The tool profiles a routine may name (the runner's); absent: a routine may name none. */
  readonly profiles?: readonly string[];
  /** The clock (`now()`, epoch ms); injected in tests. */
  readonly clock?: Pick<Clock, "now">;
  /** A slot at most this old when a tick finds it runs on time; older is `missed` (or late with `catchUp`). Default 5 minutes. */
  readonly graceMs?: number;
  /** A `running` run claimed longer ago than this is interrupted (its process died). Default 30 minutes: above the runner's ten-minute turn deadline. */
  readonly interruptedAfterMs?: number;
  /** The most slots one tick looks at per routine (a long outage is recorded over several ticks). Default 100. */
  readonly maxSlotsPerTick?: number;
}

/** What one tick did, for the host's log and the console. */
export interface TickReport {
  readonly at: number;
  readonly ran: readonly RoutineRun[];
  readonly missed: readonly RoutineRun[];
  readonly submitted: readonly RoutineRun[];
  readonly interrupted: readonly RoutineRun[];
  /** Slots another process holds (its claim won). */
  readonly skipped: number;
  /** Store or routine failures the tick met (closed kinds; the routine's id, never its content). */
  readonly errors: readonly { readonly routineId: string; readonly kind: "invalid_schedule" | "store" }[];
}

export interface RoutineScheduler {
  /** Validates (cron and time zone compiled, destination served, profile known, execution available) and stores a routine. */
  saveRoutine(input: RoutineInput): Promise<Routine>;
  /** Looks at every routine once: interrupted claims, due slots (run, missed or late), submitted jobs to collect. Never throws for a routine's failure. */
  tick(now?: number): Promise<TickReport>;
  /** The operator's resolution of a `reconciliation_required` or `failed` run; `rerun` runs it again now, as attempt + 1. */
  resolve(scope: Scope, routineId: string, slot: number, action: RoutineResolveAction): Promise<RoutineRun>;
}

const DEFAULTS = { graceMs: 5 * 60_000, interruptedAfterMs: 30 * 60_000, maxSlotsPerTick: 100 };

function positive(name: string, value: number | undefined, def: number): number {
  if (value === undefined) return def;
  if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${name} must be a positive integer`);
  return value;
}

export function createRoutineScheduler(config: RoutineSchedulerConfig): RoutineScheduler {
  const owner = validateId("owner", config.owner);
  const clock = config.clock;
  const now = clock ? () => clock.now() : Date.now;
  const graceMs = positive("graceMs", config.graceMs, DEFAULTS.graceMs);
  const interruptedAfterMs = positive("interruptedAfterMs", config.interruptedAfterMs, DEFAULTS.interruptedAfterMs);
  const maxSlots = positive("maxSlotsPerTick", config.maxSlotsPerTick, DEFAULTS.maxSlotsPerTick);
  const profiles = new Set(config.profiles ?? []);
  const deps: RunDeps = { runs: config.runs, sink: config.sink, turns: config.turns, ...(config.jobs ? { jobs: config.jobs } : {}), owner, now };

  const check = (input: RoutineInput): Routine => {
    const { routine } = normalizeRoutine(input);
    compileSchedule(routine.schedule);
    if (!config.sink.destinations.includes(routine.destination)) throw new ValidationError("routine.destination", "unknown_destination", "destination names no destination the sink serves");
    if (routine.profile !== undefined && !profiles.has(routine.profile)) throw new ValidationError("routine.profile", "unknown_profile", "profile names no configured profile");
    if (routine.execution === "job" && !config.jobs) throw new ValidationError("routine.execution", "no_jobs", "execution job needs a RoutineJobs seam");
    return routine;
  };

  /** Runs (or submits, or collects) a run this process holds. */
  const execute = (routine: Routine, run: RoutineRun, collecting: boolean): Promise<RoutineRun> => {
    if (collecting) return collectSlot(deps, routine, run);
    return routine.execution === "job" ? submitSlot(deps, routine, run) : runTurnSlot(deps, routine, run);
  };

  /**
   * A claim whose acknowledgement was lost: read back whether this process holds it. Only a run
   * under this owner claimed at exactly this time is ours; anything else (or a failed read) is left
   * alone — a `running` run nobody finishes becomes `reconciliation_required` later, never re-run.
   */
  const claimOrReadBack = async (routine: Routine, slot: number, at: number, late: boolean): Promise<RoutineClaimResult | undefined> => {
    const claim = { scope: routine.scope, routineId: routine.id, slot, sessionId: routineSessionId(routine.id, slot), owner, at, ...(late ? { late } : {}) };
    try {
      return await config.runs.claim(claim);
    } catch (error) {
      const run = await config.runs.get(routine.scope, routine.id, slot).catch(() => undefined);
      if (run?.state === "running" && run.owner === owner && run.claimedAt === at) return { status: "claimed", run, collecting: false };
      throw error;
    }
  };

  const due = async (routine: Routine, at: number, report: Mutable): Promise<void> => {
    let compiled: ReturnType<typeof compileSchedule>;
    try {
      compiled = compileSchedule(routine.schedule);
    } catch {
      report.errors.push({ routineId: routine.id, kind: "invalid_schedule" });
      return;
    }
    const latest = await config.runs.latest(routine.scope, routine.id);
    const after = Math.max(routine.createdAt, latest?.slot ?? -1);
    for (const slot of compiled.slotsBetween(after, at, maxSlots)) {
      const late = at - slot > graceMs;
      if (late && !routine.catchUp) {
        const missed = await config.runs.recordMissed({ scope: routine.scope, routineId: routine.id, slot, sessionId: routineSessionId(routine.id, slot), at });
        if (missed.status === "claimed") report.missed.push(missed.run);
        else report.skipped += 1;
        continue;
      }
      const claimed = await claimOrReadBack(routine, slot, now(), late);
      if (claimed?.status !== "claimed") {
        report.skipped += 1;
        continue;
      }
      const done = await execute(routine, claimed.run, false);
      (done.state === "submitted" ? report.submitted : report.ran).push(done);
    }
  };

  /** Collects the routine's submitted runs, but not one this tick submitted (the provider has barely seen it). */
  const collect = async (routine: Routine, at: number, report: Mutable): Promise<void> => {
    const page = await config.runs.list(routine.scope, { routineId: routine.id, state: "submitted", limit: 100 });
    for (const waiting of page.items) {
      if ((waiting.submission?.submittedAt ?? 0) >= at) continue;
      const claimed = await config.runs.claim({ scope: routine.scope, routineId: routine.id, slot: waiting.slot, sessionId: waiting.sessionId, owner, at: now() });
      if (claimed.status !== "claimed") {
        report.skipped += 1;
        continue;
      }
      const done = await execute(routine, claimed.run, claimed.collecting);
      (done.state === "submitted" ? report.submitted : report.ran).push(done);
    }
  };

  const tick = async (at = now()): Promise<TickReport> => {
    const report: Mutable = { at, ran: [], missed: [], submitted: [], interrupted: [], skipped: 0, errors: [] };
    try {
      report.interrupted.push(...(await config.runs.reconcileInterrupted({ claimedBefore: at - interruptedAfterMs, at })));
    } catch {
      report.errors.push({ routineId: "*", kind: "store" });
    }
    let cursor: string | undefined;
    do {
      let page: Awaited<ReturnType<RoutineStore["scan"]>>;
      try {
        page = await config.routines.scan({ limit: 100, ...(cursor ? { cursor } : {}) });
      } catch {
        report.errors.push({ routineId: "*", kind: "store" });
        break;
      }
      for (const routine of page.items) {
        if (!routine.enabled) continue;
        try {
          await due(routine, at, report);
          if (routine.execution === "job") await collect(routine, at, report);
        } catch {
          report.errors.push({ routineId: routine.id, kind: "store" });
        }
      }
      cursor = page.nextCursor;
    } while (cursor);
    return Object.freeze({ ...report, ran: Object.freeze(report.ran), missed: Object.freeze(report.missed), submitted: Object.freeze(report.submitted), interrupted: Object.freeze(report.interrupted), errors: Object.freeze(report.errors) });
  };

  const resolve = async (scope: Scope, routineId: string, slot: number, action: RoutineResolveAction): Promise<RoutineRun> => {
    const run = await config.runs.resolve({ scope, routineId, slot, action, at: now(), ...(action === "rerun" ? { owner } : {}) });
    if (action !== "rerun") return run;
    const routine = await config.routines.get(scope, routineId);
    if (!routine) return config.runs.finish({ scope, routineId, slot, owner, attempt: run.attempt, at: now(), state: "failed", reason: "invalid_request" });
    return execute(routine, run, false);
  };

  return Object.freeze({
    saveRoutine: async (input: RoutineInput) => (await config.routines.put(check(input))).routine,
    tick,
    resolve,
  });
}

interface Mutable {
  at: number;
  ran: RoutineRun[];
  missed: RoutineRun[];
  submitted: RoutineRun[];
  interrupted: RoutineRun[];
  skipped: number;
  errors: { routineId: string; kind: "invalid_schedule" | "store" }[];
}
