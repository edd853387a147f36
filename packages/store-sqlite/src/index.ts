/**
 * `@alma-harness/store-sqlite`: every store contract on one SQLite file (WAL), with root results in
 * a second, attached file. The embedded default: zero setup, safe for one process with many
 * concurrent turns (and for several processes on one file, through SQLite's write lock).
 */
import type { DurabilityBarrier } from "@alma-harness/core";
import type { DurableStores } from "@alma-harness/core/stores";
import { SqliteAdmissionStore } from "./admissions.js";
import { SqliteAuditLog } from "./audit.js";
import { openDatabase, type SqliteStoreOptions, schemaVersion } from "./db.js";
import { SqliteErasure } from "./erasure.js";
import { SqliteExecutionStore } from "./execution.js";
import { SqliteSessionLabelStore } from "./labels.js";
import { SqliteResultStore } from "./results.js";
import { SqliteRoutineRunStore, SqliteRoutineStore } from "./routines.js";
import { SqliteSessionStore } from "./sessions.js";
import { SqliteCostSettlementStore, SqliteSpendStore } from "./settlements.js";
import { SqliteEpisodeStore, SqliteMemoryErasure, SqliteProfileStore } from "./memory.js";
import { SqliteModelJobStore } from "./model-jobs.js";
import { SqliteParkedTurnStore } from "./parked.js";
import { SqliteUsageInbox } from "./usage-inbox.js";

export { RECORD_VERSION } from "@alma-harness/core/stores";
export { defaultRootPath, type SqliteStoreOptions } from "./db.js";
export { SqliteModelJobStore } from "./model-jobs.js";
export { SqliteParkedTurnStore } from "./parked.js";
export { SqliteUsageInbox } from "./usage-inbox.js";
export { SqliteEpisodeStore, SqliteMemoryErasure, SqliteProfileStore } from "./memory.js";
export { SqliteRoutineRunStore, SqliteRoutineStore } from "./routines.js";
export { MAIN_MIGRATIONS, type Migration, ROOT_MIGRATIONS } from "./migrations.js";

/** Every store over one connection: step results in the main file, root results in the attached root-results file. */
export interface SqliteStores extends DurableStores {
  /** Turns parked on permission asks, in the main file beside the admissions they hold. */
  readonly parked: SqliteParkedTurnStore;
  /** The durability point of `commits: "grouped"` (a no-op in `each` mode). */
  readonly barrier: DurabilityBarrier;
  /** Commits made by this connection so far (the benchmark reads it). */
  commitCount(): number;
  /** Where the root results live: the attached file, or their own table set in the main file. */
  readonly rootResultsIn: "attached" | "main";
  /** Schema versions of the two files, as migrated on open. */
  readonly schema: { readonly main: number; readonly root: number };
  /** Closes the connection; later calls reject with `StoreUnavailableError`. Safe to call twice. */
  close(): void;
}

/** Opens (creating when absent) and migrates the database, and returns every store over one connection. */
export function createSqliteStores(options: SqliteStoreOptions): SqliteStores {
  const db = openDatabase(options);
  const execution = new SqliteExecutionStore(db);
  return Object.freeze({
    admissions: new SqliteAdmissionStore(db),
    parked: new SqliteParkedTurnStore(db),
    sessions: new SqliteSessionStore(db),
    execution,
    journal: execution,
    results: new SqliteResultStore(db, "main"),
    rootResults: new SqliteResultStore(db, "root"),
    settlements: new SqliteCostSettlementStore(db),
    spend: new SqliteSpendStore(db),
    labels: new SqliteSessionLabelStore(db),
    usageInbox: new SqliteUsageInbox(db),
    episodes: new SqliteEpisodeStore(db),
    profiles: new SqliteProfileStore(db),
    memoryErasure: new SqliteMemoryErasure(db),
    modelJobs: new SqliteModelJobStore(db),
    routines: new SqliteRoutineStore(db),
    routineRuns: new SqliteRoutineRunStore(db),
    audit: new SqliteAuditLog(db),
    erasure: new SqliteErasure(db),
    barrier: Object.freeze({ commit: async () => db.commit() }),
    commitCount: () => db.commits,
    schema: Object.freeze({
      main: schemaVersion(db.raw, "main"),
      root: schemaVersion(db.raw, db.root.versions),
    }),
    rootResultsIn: db.root.mode,
    close: () => db.close(),
  });
}
