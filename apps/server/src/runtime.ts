import { join } from "node:path";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { createPostgresStores } from "@alma-harness/store-postgres";

/** Where the host keeps its state, as the banner and `alma doctor` print it. */
export interface StoreInfo {
  readonly kind: "memory" | "sqlite" | "postgres";
  /** A path or a redacted URL; never a password. */
  readonly location: string;
  readonly durable: boolean;
  readonly note?: string;
}

export interface OpenedRuntime {
  readonly runtime: Runtime;
  readonly store: StoreInfo;
}

export interface StoreEnv {
  readonly home: string;
  /** `postgres://…` for PostgreSQL; otherwise the embedded SQLite file under `home`. */
  readonly databaseUrl: string | undefined;
  /** Volatile in-memory stores (embedding, quick experiments); never the default. */
  readonly memory?: boolean;
  /** PostgreSQL schema names (default `alma` and `alma_root`). */
  readonly pgSchemas?: { readonly schema: string; readonly rootSchema: string };
}

/** The embedded store's main file; root results go beside it in their own file. */
export function sqlitePath(home: string): string {
  return join(home, "alma.db");
}

export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(an unparsable URL)";
  }
}

function postgresUrl(url: string): string {
  if (!/^postgres(ql)?:\/\//.test(url))
    throw new Error("ALMA_DATABASE_URL must be a postgres:// URL");
  return url;
}

/**
 * The one place the host picks its store: PostgreSQL when `ALMA_DATABASE_URL` is set (its schema
 * must be migrated first, with `alma migrate`), else the embedded SQLite file in `home`.
 */
export async function openRuntime(env: StoreEnv, config: RuntimeConfig): Promise<OpenedRuntime> {
  if (env.memory)
    return {
      runtime: memory(config),
      store: {
        kind: "memory",
        location: "in memory",
        durable: false,
        note: "state is lost on exit",
      },
    };
  if (env.databaseUrl !== undefined) {
    const connectionString = postgresUrl(env.databaseUrl);
    try {
      const runtime = await postgres({ ...config, store: { connectionString, ...env.pgSchemas } });
      return {
        runtime,
        store: { kind: "postgres", location: redact(connectionString), durable: true },
      };
    } catch (error) {
      throw new Error(
        `PostgreSQL at ${redact(connectionString)}: ${(error as Error).message.replace(/run alma-pg-migrate/, "run `npx alma migrate`")}`,
      );
    }
  }
  const path = sqlitePath(env.home);
  return {
    runtime: sqlite({ ...config, store: { path } }),
    store: { kind: "sqlite", location: path, durable: true },
  };
}

/** `alma migrate`: brings the configured store's schema up to date and says what it did. */
export async function migrateStore(env: StoreEnv): Promise<string> {
  if (env.databaseUrl !== undefined) {
    const connectionString = postgresUrl(env.databaseUrl);
    const stores = await createPostgresStores({
      connectionString,
      migrate: true,
      ...env.pgSchemas,
    });
    await stores.close();
    return `PostgreSQL at ${redact(connectionString)}: schemas ${stores.schemas.schema} and ${stores.schemas.rootSchema} are up to date`;
  }
  const path = sqlitePath(env.home);
  const stores = createSqliteStores({ path });
  stores.close();
  return `SQLite at ${path}: schema version ${stores.schema.main} (root results ${stores.schema.root}), up to date`;
}
