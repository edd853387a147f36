export {
  AlmaError,
  InvalidIdError,
  InvalidScopeError,
  loadPeer,
  MissingDependencyError,
  ValidationError,
} from "./errors.js";
export { normalizeScope, type Scope, scopePath, validateId } from "./scope.js";
export { deepFreeze } from "./freeze.js";
export {
  canonicalJson,
  dataFields,
  DEFAULT_SNAPSHOT_LIMITS,
  type JsonObject,
  type JsonValue,
  SnapshotError,
  type SnapshotLimits,
  type SnapshotRule,
  snapshot,
  snapshotObject,
  utf8Length,
} from "./snapshot.js";
export * from "./media-source.js";
export * from "./messages.js";
export {
  type CompiledSchema,
  compileSchema,
  type JsonSchema,
  type SchemaInput,
  type StandardJsonSchemaLike,
} from "./json-schema.js";
export * from "./tools.js";
export type { InputCheck, StandardInput, StandardOutput } from "./standard-schema.js";
export * from "./tool-context.js";
export * from "./routing.js";
export * from "./usage.js";
export * from "./pricing.js";
export * from "./caps.js";
export * from "./failures.js";
export * from "./model.js";
export * from "./hooks.js";
export * from "./runtime-seams.js";
export * from "./stores/errors.js";
export * from "./stores/admissions.js";
export {
  SCOPE_FENCE_REASONS,
  type ScopeFence,
  type ScopeFenceReason,
  type ScopeFenceTarget,
} from "./stores/fences.js";
export type { DurabilityBarrier } from "./stores/barrier.js";
export * from "./stores/sessions.js";
export * from "./stores/execution.js";
export {
  FRAME_TOKENS,
  inputTokenBound,
  MAX_SEARCH_USES,
  persistentBlockLimits,
  type ReservationLimits,
  requestChars,
  worstCaseMicros,
} from "./reservation.js";
export * from "./stores/results.js";
export * from "./stores/parked.js";
export { attributedDecision, KERNEL_REASONS, MAX_PARKED_ASKS } from "./stores/parked-rules.js";
export * from "./stores/settlements.js";
/** Seed 001's name for the settlement normalizer (`normalizeSettlement` of `./stores`): the same function. */
export { normalizeSettlement as normalizeCostSettlement } from "./stores/normalize.js";
export * from "./stores/labels.js";
export * from "./stores/usage-inbox.js";
export * from "./stores/memory-records.js";
export * from "./stores/embedding.js";
export * from "./stores/normalize-memory.js";
export * from "./stores/model-jobs.js";
export * from "./model-jobs.js";
export * from "./stores/audit.js";
export {
  isTrailShaped,
  processTrailKey,
  resolveTrailKey,
  askTokenMac,
  sessionPseudonym,
  TRAIL_KEY_MIN_BYTES,
  TRAIL_VALUE_MAX,
  TrailKey,
  type TrailKeyMaterial,
  trailHash,
  trailId,
  trailJoin,
  trailKey,
  trailKind,
  type TrailValue,
  TrailValueError,
} from "./trail.js";
export * from "./stores/erasure.js";
export {
  type AlmaErrorCode,
  type CallCause,
  isUncertainCause,
  type RunnerCause,
  type StreamRule,
  stopTag,
  type UncertainCause,
} from "./vocabulary.js";
export * from "./stores/routines.js";
export * from "./stores/routine-runs.js";
export * from "./stores/routine-transitions.js";
export * from "./routine-seams.js";
