/**
 * `@alma-harness/core/testing`: reference implementations of every store contract, a manual clock
 * and sequential ids. Deterministic, in memory, and importing no test framework.
 */
export { InMemoryAdmissionStore } from "./admissions.js";
export { type AuditFailure, normalizeAuditQuery, RecordingAuditLog } from "./audit.js";
export { MANUAL_CLOCK_START, ManualClock, SequentialIds } from "./clock.js";
export { expiryChange, InMemoryExecutionStore, sameClaim } from "./execution.js";
export { InMemorySessionLabelStore } from "./labels.js";
export {
  type AdmitInput,
  eventIdsOf,
  lastRotation,
  normalizeAdmit,
  normalizeAuditEvent,
  normalizeCancelCause,
  normalizeClaim,
  normalizeEnvelope,
  normalizeFence,
  normalizeMessages,
  normalizeReceivedEvidence,
  normalizeReconcile,
  normalizeReleaseExpired,
  normalizeReservation,
  normalizeSettlement,
  normalizeUsage,
  TRAILS,
  viewOffset,
} from "./normalize.js";
export { InMemoryExecutionResultStore, oversize, putRefusal, resultView } from "./results.js";
export {
  closedObject,
  type CursorPart,
  compareKeys,
  decodeCursor,
  encodeCursor,
  frozenCopy,
  PAGE,
  pageLimit,
  pageOf,
  pageOfFetched,
  sameJson,
  scopeKey,
  validateCount,
  validateDay,
  validateName,
  validateOneOf,
  validateOrg,
  validateTime,
} from "./rules.js";
export { InMemorySessionStore } from "./sessions.js";
export { InMemoryCostSettlementStore, InMemorySpendStore } from "./settlements.js";
