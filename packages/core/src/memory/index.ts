/**
 * `@alma-harness/core/memory`: every store contract in memory, the reference implementations.
 * Deterministic and volatile: each method validates with the same rules as the durable stores
 * (`@alma-harness/core/stores`), then runs synchronously to its end, so every call is one atomic
 * step. For tests, demos and single-process hosts that need nothing to outlive the process.
 */
export { InMemoryAdmissionStore } from "./admissions.js";
export { InMemoryAuditLog } from "./audit.js";
export { InMemoryErasure, MEMORY_STATE } from "./erase.js";
export { InMemoryExecutionStore } from "./execution.js";
export { InMemorySessionLabelStore } from "./labels.js";
export { InMemoryExecutionResultStore } from "./results.js";
export { InMemoryRoutineRunStore, InMemoryRoutineStore } from "./routines.js";
export { InMemorySessionStore } from "./sessions.js";
export { InMemoryCostSettlementStore, InMemorySpendStore } from "./settlements.js";
export { type InMemoryStores, inMemoryStores } from "./stores.js";
export { InMemoryUsageInbox } from "./usage-inbox.js";
export { InMemoryModelJobStore } from "./model-jobs.js";
export { InMemoryParkedTurnStore } from "./parked.js";
