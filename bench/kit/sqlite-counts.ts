// How the benchmarks count SQLite's work from outside the stores. Importing this module patches
// better-sqlite3's statements in this process (once).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

/**
 * Statement executions in this process through better-sqlite3's prepared statements (every `run`,
 * `get`, `all` and `iterate`): `all` of them; `writes`, the `run`s of statements that return no
 * rows; `control`, those that only open, close or mark a transaction (BEGIN, COMMIT, ROLLBACK,
 * SAVEPOINT, RELEASE: better-sqlite3's `transaction()` runs them as prepared statements too, so
 * they are in `all`, and in `writes`). `db.exec` and pragmas are not counted.
 */
export const sqliteStatements = { all: 0, writes: 0, control: 0 };
{
  const probe = new Database(":memory:");
  type Counted = { reader: boolean; source: string };
  const Statement = Object.getPrototypeOf(probe.prepare("select 1")) as Record<
    "run" | "get" | "all" | "iterate",
    (this: Counted, ...a: unknown[]) => unknown
  >;
  const control = new WeakMap<object, boolean>();
  const isControl = (statement: Counted) => {
    let known = control.get(statement);
    if (known === undefined) {
      known = /^\s*(begin|commit|end|rollback|savepoint|release)\b/i.test(statement.source);
      control.set(statement, known);
    }
    return known;
  };
  for (const name of ["run", "get", "all", "iterate"] as const) {
    const original = Statement[name];
    Statement[name] = function (this: Counted, ...args: unknown[]) {
      sqliteStatements.all += 1;
      if (name === "run" && !this.reader) sqliteStatements.writes += 1;
      if (isControl(this)) sqliteStatements.control += 1;
      return original.apply(this, args);
    };
  }
  probe.close();
}

/**
 * Commit frames in a WAL file (frame header bytes 4-7: the database size after a commit, else 0),
 * with matching salts: each one a flush. Read it before the last connection closes (closing
 * checkpoints the WAL away) and open every connection with `wal_autocheckpoint = 0`.
 */
export function walCommits(path: string): number {
  if (!existsSync(path)) return 0;
  const wal = readFileSync(path);
  if (wal.length < 32) return 0;
  const pageSize = wal.readUInt32BE(8);
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    if (wal.readUInt32BE(at + 4) !== 0) commits += 1;
  }
  return commits;
}

/** The WAL files a store's flushes land in: the main file's and the attached root-results file's. */
export function storeWals(path: string): readonly string[] {
  return [`${path}-wal`, `${path.replace(/\.db$/, "")}.root-results.db-wal`];
}

/** Flushes so far across `wals`. */
export function flushes(wals: readonly string[]): number {
  return wals.reduce((sum, wal) => sum + walCommits(wal), 0);
}
