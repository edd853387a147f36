/**
 * `@alma-harness/store-postgres`: every store contract on PostgreSQL, for many host processes on one
 * database. Fences, claims and admissions are decided inside the database's transactions; root
 * results live in their own schema behind their own pool.
 */
import {
  type AdmissionStore,
  type AuditLog,
  type CostSettlementStore,
  type ExecutionResultStore,
  type ExecutionStore,
  type SessionLabelStore,
  type SessionStore,
  type SpendStore,
  StoreUnavailableError,
} from "@alma-harness/core";
import type pg from "pg";
import { PgAdmissionStore } from "./admissions.js";
import { PgAuditLog } from "./audit.js";
import { PgExecutionStore } from "./execution.js";
import { PgSessionLabelStore } from "./labels.js";
import { loadMigrations, migrate, resolveSchemas, type SchemaNames, schemaVersion } from "./migrate.js";
import { schemaPool } from "./pg.js";
import { PgResultStore } from "./results.js";
import { PgSessionStore } from "./sessions.js";
import { PgCostSettlementStore, PgSpendStore } from "./settlements.js";

export { DEFAULT_ROOT_SCHEMA, DEFAULT_SCHEMA, loadMigrations, migrate, type PgMigration, type SchemaNames, schemaVersion } from "./migrate.js";
export { RECORD_VERSION } from "@alma-harness/core/stores";
export { mapPgError } from "./pg.js";

export interface PostgresStoreOptions extends SchemaNames {
  /** `postgresql://…` URL (or give `pool`: host, user, password, ssl, …). */
  readonly connectionString?: string;
  /** Connection settings for both pools (a `search_path` is set per pool and cannot be overridden). */
  readonly pool?: Omit<pg.PoolConfig, "options" | "types">;
  /** Run `migrate` before opening (default false: the schema must already be at this build's version). */
  readonly migrate?: boolean;
}

export interface PostgresStores {
  readonly admissions: AdmissionStore;
  readonly sessions: SessionStore;
  readonly execution: ExecutionStore;
  /** The same execution store, under the name `ConversationStores` gives it. */
  readonly journal: ExecutionStore;
  /** Step results, in the main schema. */
  readonly results: ExecutionResultStore;
  /** Conversation roots' final results, in the root schema through the root pool. */
  readonly rootResults: ExecutionResultStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly labels: SessionLabelStore;
  readonly audit: AuditLog;
  readonly schemas: { readonly schema: string; readonly rootSchema: string };
  /** Ends both pools; later calls reject with `StoreUnavailableError`. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Opens two pools (main schema; root schema alone on its search_path), checks, or with
 * `migrate: true` brings, the schema to this build's version, and returns every store.
 */
export async function createPostgresStores(options: PostgresStoreOptions): Promise<PostgresStores> {
  const schemas = resolveSchemas(options);
  const config: pg.PoolConfig = { ...options.pool, ...(options.connectionString ? { connectionString: options.connectionString } : {}) };
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
    const version = await schemaVersion(main, schemas.schema);
    const latest = loadMigrations().length;
    if (version !== latest) {
      throw new StoreUnavailableError(`schema ${schemas.schema} is at version ${version}, this build needs ${latest}: run alma-pg-migrate`);
    }
  } catch (error) {
    await close();
    throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError("could not open the postgres stores", error);
  }
  const execution = new PgExecutionStore(main, schemas.schema);
  return Object.freeze({
    admissions: new PgAdmissionStore(main),
    sessions: new PgSessionStore(main),
    execution,
    journal: execution,
    results: new PgResultStore(main, schemas.schema),
    // The root pool reaches the main schema's admissions table by its qualified name, to fence final results.
    rootResults: new PgResultStore(root, schemas.schema),
    settlements: new PgCostSettlementStore(main),
    spend: new PgSpendStore(main),
    labels: new PgSessionLabelStore(main),
    audit: new PgAuditLog(main),
    schemas,
    close,
  });
}
