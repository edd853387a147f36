import {
  type Routine,
  type RoutineClaimResult,
  type RoutineRun,
  type RoutineStore,
  routineSessionId,
} from "@alma-harness/core";
import { compileSchedule } from "./cron.js";
import { collectSlot, type RunDeps, runTurnSlot, submitSlot } from "./run.js";

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
  readonly errors: readonly {
    readonly routineId: string;
    readonly kind: "invalid_schedule" | "store";
  }[];
}

/** A tick's settings and the stores it reads, resolved once by the scheduler. */
export interface TickContext extends RunDeps {
  readonly routines: RoutineStore;
  readonly graceMs: number;
  readonly interruptedAfterMs: number;
  readonly maxSlots: number;
}

interface Report {
  readonly at: number;
  readonly ran: RoutineRun[];
  readonly missed: RoutineRun[];
  readonly submitted: RoutineRun[];
  readonly interrupted: RoutineRun[];
  skipped: number;
  readonly errors: { routineId: string; kind: "invalid_schedule" | "store" }[];
}

/** Runs (or submits, or collects) a run this process holds. */
export function execute(
  ctx: TickContext,
  routine: Routine,
  run: RoutineRun,
  collecting: boolean,
): Promise<RoutineRun> {
  if (collecting) return collectSlot(ctx, routine, run);
  return routine.execution === "job"
    ? submitSlot(ctx, routine, run)
    : runTurnSlot(ctx, routine, run);
}

/**
 * A claim; when its acknowledgement is lost, read back whether this process holds it. Only a run
 * under this owner claimed at exactly this time is ours; anything else (or a failed read) rethrows
 * — a `running` run nobody finishes becomes `reconciliation_required` later, never re-run.
 */
async function claimOrReadBack(
  ctx: TickContext,
  routine: Routine,
  slot: number,
  late: boolean,
): Promise<RoutineClaimResult> {
  const at = ctx.now();
  const claim = {
    scope: routine.scope,
    routineId: routine.id,
    slot,
    sessionId: routineSessionId(routine.id, slot),
    owner: ctx.owner,
    at,
    ...(late ? { late } : {}),
  };
  try {
    return await ctx.runs.claim(claim);
  } catch (error) {
    const run = await ctx.runs.get(routine.scope, routine.id, slot).catch(() => undefined);
    if (run?.state === "running" && run.owner === ctx.owner && run.claimedAt === at)
      return { status: "claimed", run, collecting: false };
    throw error;
  }
}

const record = (report: Report, done: RoutineRun) =>
  (done.state === "submitted" ? report.submitted : report.ran).push(done);

/** The routine's slots since its latest recorded one: on time → run; older → missed, or late with `catchUp`. */
async function due(ctx: TickContext, routine: Routine, report: Report): Promise<void> {
  let compiled: ReturnType<typeof compileSchedule>;
  try {
    compiled = compileSchedule(routine.schedule);
  } catch {
    report.errors.push({ routineId: routine.id, kind: "invalid_schedule" });
    return;
  }
  const latest = await ctx.runs.latest(routine.scope, routine.id);
  for (const slot of compiled.slotsBetween(
    Math.max(routine.createdAt, latest?.slot ?? -1),
    report.at,
    ctx.maxSlots,
  )) {
    const late = report.at - slot > ctx.graceMs;
    if (late && !routine.catchUp) {
      const missed = await ctx.runs.recordMissed({
        scope: routine.scope,
        routineId: routine.id,
        slot,
        sessionId: routineSessionId(routine.id, slot),
        at: report.at,
      });
      if (missed.status === "claimed") report.missed.push(missed.run);
      else report.skipped += 1;
      continue;
    }
    const claimed = await claimOrReadBack(ctx, routine, slot, late);
    if (claimed.status !== "claimed") report.skipped += 1;
    else record(report, await execute(ctx, routine, claimed.run, false));
  }
}

/** Collects the routine's submitted runs under a fresh claim each, but not one this tick submitted. */
async function collect(ctx: TickContext, routine: Routine, report: Report): Promise<void> {
  const page = await ctx.runs.list(routine.scope, {
    routineId: routine.id,
    state: "submitted",
    limit: 100,
  });
  for (const waiting of page.items) {
    if ((waiting.submission?.submittedAt ?? 0) >= report.at) continue;
    const claimed = await ctx.runs.claim({
      scope: routine.scope,
      routineId: routine.id,
      slot: waiting.slot,
      sessionId: waiting.sessionId,
      owner: ctx.owner,
      at: ctx.now(),
    });
    if (claimed.status !== "claimed") report.skipped += 1;
    else record(report, await execute(ctx, routine, claimed.run, claimed.collecting));
  }
}

/** One tick: interrupted claims first, then every enabled routine in `(scope, id)` order. Never throws for a routine. */
export async function tick(ctx: TickContext, at: number): Promise<TickReport> {
  const report: Report = {
    at,
    ran: [],
    missed: [],
    submitted: [],
    interrupted: [],
    skipped: 0,
    errors: [],
  };
  try {
    report.interrupted.push(
      ...(await ctx.runs.reconcileInterrupted({ claimedBefore: at - ctx.interruptedAfterMs, at })),
    );
  } catch {
    report.errors.push({ routineId: "*", kind: "store" });
  }
  let cursor: string | undefined;
  do {
    let page: Awaited<ReturnType<RoutineStore["scan"]>>;
    try {
      page = await ctx.routines.scan({ limit: 100, ...(cursor ? { cursor } : {}) });
    } catch {
      report.errors.push({ routineId: "*", kind: "store" });
      break;
    }
    for (const routine of page.items) {
      if (!routine.enabled) continue;
      try {
        await due(ctx, routine, report);
        if (routine.execution === "job") await collect(ctx, routine, report);
      } catch {
        report.errors.push({ routineId: routine.id, kind: "store" });
      }
    }
    cursor = page.nextCursor;
  } while (cursor);
  const { ran, missed, submitted, interrupted, errors } = report;
  return Object.freeze({
    at,
    skipped: report.skipped,
    ran: Object.freeze(ran),
    missed: Object.freeze(missed),
    submitted: Object.freeze(submitted),
    interrupted: Object.freeze(interrupted),
    errors: Object.freeze(errors),
  });
}
