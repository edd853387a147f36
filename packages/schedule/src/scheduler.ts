import {
  type Clock,
  normalizeRoutine,
  type OutputSink,
  type Routine,
  type RoutineInput,
  type RoutineResolveAction,
  type RoutineRun,
  type RoutineRunStore,
  type RoutineStore,
  type Scope,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import { compileSchedule } from "./cron.js";
import type { RoutineJobs } from "./jobs.js";
import type { RoutineTurns } from "./run.js";
import { execute, type TickContext, type TickReport, tick } from "./tick.js";

export type { TickReport } from "./tick.js";

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

export interface RoutineScheduler {
  /** Validates (cron and time zone compiled, destination served, profile known, execution available) and stores a routine. */
  saveRoutine(input: RoutineInput): Promise<Routine>;
  /** Looks at every routine once: interrupted claims, due slots (run, missed or late), submitted jobs to collect. Never throws for a routine's failure. */
  tick(now?: number): Promise<TickReport>;
  /** The operator's resolution of a `reconciliation_required` or `failed` run; `rerun` runs it again now, as attempt + 1. */
  resolve(
    scope: Scope,
    routineId: string,
    slot: number,
    action: RoutineResolveAction,
  ): Promise<RoutineRun>;
}

const DEFAULTS = { graceMs: 5 * 60_000, interruptedAfterMs: 30 * 60_000, maxSlotsPerTick: 100 };

function positive(name: string, value: number | undefined, def: number): number {
  if (value === undefined) return def;
  if (!Number.isSafeInteger(value) || value < 1)
    throw new TypeError(`${name} must be a positive integer`);
  return value;
}

/** A routine validated as the scheduler can run it: core's record rules, the schedule compiled, its destination, profile and execution available. */
function checkRoutine(
  config: RoutineSchedulerConfig,
  profiles: ReadonlySet<string>,
  input: RoutineInput,
): Routine {
  const { routine } = normalizeRoutine(input);
  compileSchedule(routine.schedule);
  if (!config.sink.destinations.includes(routine.destination))
    throw new ValidationError(
      "routine.destination",
      "unknown_destination",
      "destination names no destination the sink serves",
    );
  if (routine.profile !== undefined && !profiles.has(routine.profile))
    throw new ValidationError(
      "routine.profile",
      "unknown_profile",
      "profile names no configured profile",
    );
  if (routine.execution === "job" && !config.jobs)
    throw new ValidationError(
      "routine.execution",
      "no_jobs",
      "execution job needs a RoutineJobs seam",
    );
  return routine;
}

export function createRoutineScheduler(config: RoutineSchedulerConfig): RoutineScheduler {
  const clock = config.clock;
  const profiles = new Set(config.profiles ?? []);
  const ctx: TickContext = {
    runs: config.runs,
    routines: config.routines,
    sink: config.sink,
    turns: config.turns,
    ...(config.jobs ? { jobs: config.jobs } : {}),
    owner: validateId("owner", config.owner),
    now: clock ? () => clock.now() : Date.now,
    graceMs: positive("graceMs", config.graceMs, DEFAULTS.graceMs),
    interruptedAfterMs: positive(
      "interruptedAfterMs",
      config.interruptedAfterMs,
      DEFAULTS.interruptedAfterMs,
    ),
    maxSlots: positive("maxSlotsPerTick", config.maxSlotsPerTick, DEFAULTS.maxSlotsPerTick),
  };
  const resolve = async (
    scope: Scope,
    routineId: string,
    slot: number,
    action: RoutineResolveAction,
  ): Promise<RoutineRun> => {
    const run = await ctx.runs.resolve({
      scope,
      routineId,
      slot,
      action,
      at: ctx.now(),
      ...(action === "rerun" ? { owner: ctx.owner } : {}),
    });
    if (action !== "rerun") return run;
    const routine = await ctx.routines.get(scope, routineId);
    if (!routine)
      return ctx.runs.finish({
        scope,
        routineId,
        slot,
        owner: ctx.owner,
        attempt: run.attempt,
        at: ctx.now(),
        state: "failed",
        reason: "invalid_request",
      });
    return execute(ctx, routine, run, false);
  };
  return Object.freeze({
    saveRoutine: async (input: RoutineInput) =>
      (await ctx.routines.put(checkRoutine(config, profiles, input))).routine,
    tick: (at = ctx.now()) => tick(ctx, at),
    resolve,
  });
}
