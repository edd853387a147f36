export {
  compose,
  type Runtime,
  type RuntimeConfig,
  type RuntimeEmbedding,
  type RuntimeMemory,
  type RuntimeStores,
} from "./compose.js";
export { replyText } from "@alma-harness/conversation";
export { type MemoryRuntimeStores, memory, memoryStores } from "./memory.js";
export { postgres } from "./postgres.js";
export { sqlite } from "./sqlite.js";
export { TRAIL_KEY_FILE } from "./trail-key.js";
export { observedAudit, type TrailObserver } from "./trail-observer.js";
export {
  hasModelJobStores,
  type ModelJobStores,
  modelJobs,
  type ModelJobsConfig,
  runtimeModelJobs,
} from "./model-jobs.js";
export {
  type RoutineJobClients,
  type RoutineJobsOptions,
  routineJobId,
  routineJobs,
} from "./routine-jobs.js";
export {
  hasRoutineStores,
  type RoutineOptions,
  type RoutineStores,
  routineScheduler,
} from "./routines.js";
export { stepRunnerOf } from "./steps.js";
