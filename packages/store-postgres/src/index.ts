/**
 * `@alma-harness/store-postgres`: every store contract on PostgreSQL, for many host processes on one
 * database. Fences, claims and admissions are decided inside the database's transactions; root
 * results live in their own schema behind their own pool.
 */
import {
  type DurabilityBarrier,
  StoreUnavailableError,
  sessionMarker,
  type TrailKey,
  type TrailKeyMaterial,
} from "@alma-harness/core";
import type { DurableStores } from "@alma-harness/core/stores";
import type pg from "pg";
import { PgAdmissionStore } from "./admissions.js";
import { PgAuditLog } from "./audit.js";
import { Conn } from "./conn.js";
import { PgDb } from "./db.js";
import { PgErasure } from "./erasure.js";
import { PgExecutionStore } from "./execution.js";
import { PgSessionLabelStore } from "./labels.js";
import {
  loadMigrations,
  migrate,
  pendingMigrations,
  resolveSchemas,
  type SchemaNames,
  schemaVersion,
} from "./migrate.js";
import { schemaPool } from "./pg.js";
import { PgResultStore } from "./results.js";
import { PgRoutineRunStore, PgRoutineStore } from "./routines.js";
import { PgSessionStore } from "./sessions.js";
import { PgCostSettlementStore, PgSpendStore } from "./settlements.js";
import { PgModelJobStore } from "./model-jobs.js";
import { PgParkedTurnStore } from "./parked.js";
import { PgUsageInbox } from "./usage-inbox.js";
import { PgEpisodeStore, PgMemoryErasure, PgProfileStore } from "./memory.js";

export {
  DEFAULT_ROOT_SCHEMA,
  DEFAULT_SCHEMA,
  loadMigrations,
  migrate,
  type PgMigration,
  pendingMigrations,
  type SchemaNames,
  schemaVersion,
} from "./migrate.js";
export { RECORD_VERSION } from "@alma-harness/core/stores";
export { mapPgError } from "./pg.js";
export { PgModelJobStore } from "./model-jobs.js";
export { PgParkedTurnStore } from "./parked.js";
export { PgUsageInbox } from "./usage-inbox.js";
export { PgEpisodeStore, PgMemoryErasure, PgProfileStore } from "./memory.js";
export { PgRoutineRunStore, PgRoutineStore } from "./routines.js";

export interface PostgresStoreOptions extends SchemaNames {
  /** `postgresql://…` URL (or give `pool`: host, user, password, ssl, …). */
  readonly connectionString?: string;
  /** Connection settings for both pools (a `search_path` is set per pool and cannot be overridden). */
  readonly pool?: Omit<pg.PoolConfig, "options" | "types">;
  /** Run `migrate` before opening (default false: the schema must already be at this build's version). */
  readonly migrate?: boolean;
  /**
   * `each` (default): every store call is its own transaction, durable when it returns, as the
   * store contracts say. `grouped`: inside `stores.unit(work)` (the conversation runner runs each
   * turn in one) writes join one open transaction on one client, each in its own savepoint (a
   * refused write rolls back alone), committed at a durability point: a journal `dispatch`, an
   * admission's end, the sweeps, an erasure, `barrier.commit()` and the end of `work`. Outside a
   * unit every write stands alone, as in `each`. A failed commit loses the unit's pending writes:
   * every later write or commit of that unit rejects with `StoreUnavailableError`.
   */
  readonly commits?: "each" | "grouped";
  /**
   * The deployment's trail key: it keys the marks erased sessions' tombstones carry
   * (`erasedSessionMark`), so nobody without it can test a guessed session id against them. Every
   * process on the database opens it with the same key (the runtime's `postgres()` requires one).
   * Absent: unkeyed marks.
   */
  readonly trailKey?: TrailKey | TrailKeyMaterial;
}

/** Every store: step results in the main schema, root results in the root schema through the root pool. */
export interface PostgresStores extends DurableStores {
  /** Turns parked on permission asks, in the main schema beside the admissions they hold. */
  readonly parked: PgParkedTurnStore;
  readonly schemas: { readonly schema: string; readonly rootSchema: string };
  /** `grouped` only: the durability point the runner calls before every effect (commits the current unit). */
  readonly barrier?: DurabilityBarrier;
  /** `grouped` only: runs `work` (one turn) as one unit of writes; see `PostgresStoreOptions.commits`. */
  readonly unit?: <T>(work: () => Promise<T>) => Promise<T>;
  /** Transactions this store set committed (each standalone write, each unit commit). */
  commitCount(): number;
  /** Statements this store set sent (round trips), reads included. */
  roundTripCount(): number;
  /** Ends both pools; later calls reject with `StoreUnavailableError`. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Opens two pools (main schema; root schema alone on its search_path), checks, or with
 * `migrate: true` brings, the schema to this build's version, and returns every store.
 */
export async function createPostgresStores(options: PostgresStoreOptions): Promise<PostgresStores> {
  const schemas = resolveSchemas(options);
  const config: pg.PoolConfig = {
    ...options.pool,
    ...(options.connectionString ? { connectionString: options.connectionString } : {}),
  };
  const main = schemaPool(config, schemas.schema);
  const root = schemaPool(config, schemas.rootSchema);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all([main.end(), root.end()]);
  };
  try {
    if (options.migrate) await migrate(main, schemas);
    const missing = await pendingMigrations(main, schemas.schema);
    const version = await schemaVersion(main, schemas.schema);
    const latest = loadMigrations().at(-1)?.version ?? 0;
    if (version > latest)
      throw new StoreUnavailableError(
        `schema ${schemas.schema} is at version ${version}, newer than this build's ${latest}`,
      );
    if (missing.length > 0) {
      throw new StoreUnavailableError(
        `schema ${schemas.schema} is at version ${version} without step ${missing.join(", ")} this build needs: run alma-pg-migrate`,
      );
    }
  } catch (error) {
    await close();
    throw error instanceof StoreUnavailableError
      ? error
      : new StoreUnavailableError("could not open the postgres stores", error);
  }
  return buildStores(main, root, schemas, options.commits ?? "each", close, options.trailKey);
}

/** The store set over two open pools (`createPostgresStores` without the pools' opening and the version check). */
export function buildStores(
  main: pg.Pool,
  root: pg.Pool,
  schemas: { readonly schema: string; readonly rootSchema: string },
  commits: "each" | "grouped",
  close: () => Promise<void>,
  trailKey?: TrailKey | TrailKeyMaterial,
): PostgresStores {
  if (commits !== "each" && commits !== "grouped")
    throw new TypeError('commits must be "each" or "grouped"');
  const db = new PgDb(main, commits, sessionMarker(trailKey));
  const on = new Conn(db, main);
  const execution = new PgExecutionStore(on, schemas.schema);
  return Object.freeze({
    admissions: new PgAdmissionStore(on, schemas.schema),
    parked: new PgParkedTurnStore(on, schemas.schema),
    sessions: new PgSessionStore(on),
    execution,
    journal: execution,
    results: new PgResultStore(on, schemas.schema, schemas.schema),
    // Alone, root results go through the root pool; in a unit, on the unit's main-pool client, so
    // the table is named with its schema. The main schema's admissions table fences final results.
    rootResults: new PgResultStore(new Conn(db, root), schemas.schema, schemas.rootSchema),
    settlements: new PgCostSettlementStore(on, schemas.schema),
    spend: new PgSpendStore(on),
    labels: new PgSessionLabelStore(on),
    usageInbox: new PgUsageInbox(on),
    episodes: new PgEpisodeStore(on),
    profiles: new PgProfileStore(on),
    memoryErasure: new PgMemoryErasure(on),
    modelJobs: new PgModelJobStore(on),
    routines: new PgRoutineStore(on),
    routineRuns: new PgRoutineRunStore(on),
    audit: new PgAuditLog(on),
    erasure: new PgErasure(on, schemas),
    schemas,
    ...(db.grouped
      ? {
          barrier: Object.freeze({ commit: () => db.commit() }),
          unit: <T>(work: () => Promise<T>) => db.unit(work),
        }
      : {}),
    commitCount: () => db.count.commits,
    roundTripCount: () => db.count.roundTrips,
    close,
  });
}
