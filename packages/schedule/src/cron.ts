import { type RoutineSchedule, ValidationError } from "@alma-harness/core";
import { Cron } from "croner";

/** The shortest gap between two slots a routine may have. */
export const MIN_INTERVAL_MS = 60_000;

/** A routine's schedule compiled once: the slots it fires at, in epoch ms. */
export interface CompiledSchedule {
  readonly cron: string;
  readonly timeZone: string;
  /** The fire times strictly after `after` and at or before `until`, oldest first, at most `max` of them. */
  slotsBetween(after: number, until: number, max: number): readonly number[];
  /** The first fire time strictly after `after`, or undefined when the expression never fires again. */
  next(after: number): number | undefined;
}

/**
 * Compiles a schedule with croner (five or six fields, seconds first when six; `L`, `W`, `#`,
 * ranges, steps and names as croner reads them) in the schedule's IANA time zone. Daylight-saving
 * days follow croner: a wall time that does not exist that day fires once, at the next valid time,
 * and one that exists twice fires once. Bad input is a typed `ValidationError`
 * (`routine.schedule.cron` / `routine.schedule.timeZone`), never a croner error.
 */
export function compileSchedule(schedule: RoutineSchedule): CompiledSchedule {
  const { cron, timeZone } = schedule;
  let job: Cron;
  try {
    job = new Cron(cron, { timezone: timeZone, paused: true });
  } catch {
    throw new ValidationError(
      "routine.schedule.cron",
      "cron",
      "cron is not a cron expression (five or six fields)",
    );
  }
  const next = (after: number): number | undefined => {
    try {
      return job.nextRun(new Date(after))?.getTime();
    } catch {
      throw new ValidationError(
        "routine.schedule.timeZone",
        "time_zone",
        "timeZone must be an IANA time zone name",
      );
    }
  };
  // Refuse at compile time what can never fire, a zone croner cannot read, and a schedule that
  // fires more often than once a minute (each slot is a governed turn and a stored run).
  const probe = next(Date.now());
  if (probe === undefined)
    throw new ValidationError("routine.schedule.cron", "never_fires", "cron never fires");
  let at = probe;
  for (let i = 0; i < 4; i++) {
    const following = next(at);
    if (following === undefined) break;
    if (following - at < MIN_INTERVAL_MS)
      throw new ValidationError(
        "routine.schedule.cron",
        "too_frequent",
        "cron fires more often than once a minute",
      );
    at = following;
  }
  return Object.freeze({
    cron,
    timeZone,
    next,
    slotsBetween(after: number, until: number, max: number): readonly number[] {
      const out: number[] = [];
      let at = after;
      while (out.length < max) {
        const slot = next(at);
        if (slot === undefined || slot > until) break;
        out.push(slot);
        at = slot;
      }
      return Object.freeze(out);
    },
  });
}
