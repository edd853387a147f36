/**
 * `@alma-harness/core/testing`: the doubles — `RecordingAuditLog` (reads back what was recorded,
 * fails appends on demand), `ManualClock` and `SequentialIds`. Deterministic, importing no test
 * framework. For the imports that predate the split it also re-exports the in-memory stores
 * (`@alma-harness/core/memory`) and the store rules (`@alma-harness/core/stores`) by their names;
 * production code imports those subpaths, never this one.
 */
export * from "../memory/index.js";
export * from "../stores/index.js";
export { type AuditFailure, RecordingAuditLog } from "./audit.js";
export { MANUAL_CLOCK_START, ManualClock, SequentialIds } from "./clock.js";
