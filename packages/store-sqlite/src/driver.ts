import { createRequire } from "node:module";
import { loadPeer } from "@alma-harness/core";
import type BetterSqlite3 from "better-sqlite3";

const require = createRequire(import.meta.url);
let driver: typeof BetterSqlite3 | undefined;

/**
 * better-sqlite3, an optional peer dependency: loaded when the first SQLite store opens, so an
 * application on the memory or PostgreSQL stores never needs the native module. Missing, it is a
 * `MissingDependencyError` naming it. (`require`, not `import()`: opening a store stays synchronous.)
 */
export function betterSqlite3(): typeof BetterSqlite3 {
  driver ??= loadPeer<typeof BetterSqlite3>("better-sqlite3", "The SQLite store", require);
  return driver;
}

/** better-sqlite3 when it is installed (loaded now if it was not yet), else undefined. */
function installed(): typeof BetterSqlite3 | undefined {
  try {
    return betterSqlite3();
  } catch {
    return undefined;
  }
}

/** Whether `error` is the driver's own error (never, when the driver is not installed). */
export function isSqliteError(
  error: unknown,
): error is InstanceType<typeof BetterSqlite3.SqliteError> {
  const d = error instanceof Error ? installed() : undefined;
  return d !== undefined && error instanceof d.SqliteError;
}
