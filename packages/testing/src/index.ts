/**
 * `@alma-harness/testing`: one contract suite per store seam. Memory, SQLite and PostgreSQL run the
 * same suites; each suite takes a fixture factory and the test API (`describe`, `it`, `expect`),
 * so this package imports no test framework.
 */
import { type AdmissionFixture, admissionStoreContract } from "./admissions.js";
import { type AuditFixture, auditLogContract } from "./audit.js";
import { type ExecutionFixture, executionStoreContract } from "./execution.js";
import { scopeFenceContract } from "./fences.js";
import type { Factory, TestApi } from "./harness.js";
import { type LabelFixture, sessionLabelStoreContract } from "./labels.js";
import { executionResultStoreContract, type ResultFixture } from "./results.js";
import { type SessionFixture, sessionStoreContract } from "./sessions.js";
import {
  costSettlementStoreContract,
  type SettlementFixture,
  spendStoreContract,
} from "./settlements.js";
import { type ModelJobFixture, modelJobStoreContract } from "./model-jobs.js";
import { type ParkedFixture, parkedTurnStoreContract } from "./parked.js";
import { type UsageInboxFixture, usageInboxContract } from "./usage-inbox.js";

export { type AdmissionFixture, admissionStoreContract, admitWith } from "./admissions.js";
export { type AuditFixture, auditLogContract, recallEvent } from "./audit.js";
export { CANARIES, CANARY_FRAGMENTS, canariesIn, canaryLookupTool } from "./canaries.js";
export { claimOf, type ExecutionFixture, executionStoreContract } from "./execution.js";
export {
  type FaultCounts,
  type FaultMode,
  type FaultOptions,
  InjectedStoreFault,
  type StoreCallTap,
  StoreFaults,
  tapStore,
  tapStores,
} from "./faults.js";
export {
  type V1Reads,
  type V1Stores,
  v1FixtureReadsContract,
  v1FixtureReopened,
  v1FixtureWrites,
} from "./fixtures-v1.js";
export { scopeFenceContract } from "./fences.js";
export { type GovernedFixture, governedWritesContract } from "./governance.js";
/** The shared harness: the test API slice, fixture tests, assertions, scopes, ids and messages. */
export * from "./harness.js";
export { type LabelFixture, sessionLabelStoreContract } from "./labels.js";
export { executionResultStoreContract, reservationOf, type ResultFixture } from "./results.js";
export { type SessionFixture, sessionStoreContract } from "./sessions.js";
export {
  costSettlementStoreContract,
  DAY,
  type SettlementFixture,
  settlementOf,
  spendStoreContract,
} from "./settlements.js";
export { askIdOf, digestOf, type ParkedFixture, parkedTurnStoreContract } from "./parked.js";
export { jobItemOf, jobOf, type ModelJobFixture, modelJobStoreContract } from "./model-jobs.js";
export { observationOf, type UsageInboxFixture, usageInboxContract } from "./usage-inbox.js";
export { episodeOf, factOf, type MemoryFixture, memoryContract } from "./memory.js";
export {
  claimOf as routineClaimOf,
  type RoutineFixture,
  routineOf,
  routineStoreContract,
} from "./routines.js";

/** Every store of one implementation, as a composition hands them out (root results included). */
export type StoreSet = AdmissionFixture &
  SessionFixture &
  ExecutionFixture &
  ResultFixture &
  SettlementFixture &
  LabelFixture &
  UsageInboxFixture &
  ModelJobFixture &
  ParkedFixture &
  AuditFixture & { readonly rootResults: NonNullable<ResultFixture["rootResults"]> };

/** Runs every contract suite against one implementation; the factory builds a fresh, isolated set per test. */
export function storeContracts(name: string, factory: Factory<StoreSet>, t: TestApi): void {
  admissionStoreContract(name, factory, t);
  sessionStoreContract(name, factory, t);
  executionStoreContract(name, factory, t);
  executionResultStoreContract(name, factory, t);
  costSettlementStoreContract(name, factory, t);
  spendStoreContract(name, factory, t);
  sessionLabelStoreContract(name, factory, t);
  usageInboxContract(name, factory, t);
  modelJobStoreContract(name, factory, t);
  auditLogContract(name, factory, t);
  scopeFenceContract(name, factory, t);
  parkedTurnStoreContract(name, factory, t);
}
export {
  type Canaries,
  canariesOf,
  type ErasureFixture,
  erasureContract,
  needlesOf,
} from "./erasure.js";
export {
  type PgReader,
  type ScanHit,
  scanFiles,
  scanPostgres,
  scanSqlite,
  scanValue,
  type SqliteReader,
} from "./erasure-scan.js";
