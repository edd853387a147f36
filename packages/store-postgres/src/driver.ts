import { createRequire } from "node:module";
import { loadPeer } from "@alma-harness/core";
import type pg from "pg";

const require = createRequire(import.meta.url);
let driver: typeof pg | undefined;

/**
 * `pg`, an optional peer dependency: loaded when the first PostgreSQL pool is made (or a literal
 * escaped for one), so an application on the memory or SQLite stores never needs it. Missing, it is
 * a `MissingDependencyError` naming it.
 */
export function pgDriver(): typeof pg {
  driver ??= loadPeer<typeof pg>("pg", "The PostgreSQL store", require);
  return driver;
}

/** `pg` when it is installed (loaded now if it was not yet), else undefined. */
function installed(): typeof pg | undefined {
  try {
    return pgDriver();
  } catch {
    return undefined;
  }
}

/** Whether `error` is the server's error as `pg` reads it (never, when `pg` is not installed). */
export function isDatabaseError(error: unknown): error is pg.DatabaseError {
  const d = error instanceof Error ? installed() : undefined;
  return d !== undefined && error instanceof d.DatabaseError;
}
