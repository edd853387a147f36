/**
 * `@alma-harness/schedule`: routines on a clock. A routine (core's `Routine`, data) fires on its
 * cron slots; each slot is claimed once in the `RoutineRunStore`, run as one governed turn through
 * the conversation runner under the routine's own cap (or handed to a batch job through
 * `RoutineJobs`), delivered to its `OutputSink` destination, and recorded.
 */
export { type CompiledSchedule, compileSchedule, MIN_INTERVAL_MS } from "./cron.js";
export type {
  RoutineJobRef,
  RoutineJobResult,
  RoutineJobSubmission,
  RoutineJobs,
  RoutineWork,
} from "./jobs.js";
export { deliveryId, type RoutineTurns } from "./run.js";
export {
  createRoutineScheduler,
  type RoutineScheduler,
  type RoutineSchedulerConfig,
  type TickReport,
} from "./scheduler.js";
export { intervalTrigger } from "./trigger.js";
export { cachedTurns } from "./turns.js";
