import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import {
  AlmaError,
  ConflictError,
  type SessionMarker,
  StoreUnavailableError,
  sessionMarker,
  type TrailKey,
  type TrailKeyMaterial,
} from "@alma-harness/core";
import type Database from "better-sqlite3";
import { betterSqlite3, isSqliteError } from "./driver.js";
import { MAIN_MIGRATIONS, type Migration, ROOT_MIGRATIONS } from "./migrations.js";

export interface SqliteStoreOptions {
  /** The main database file (created with its directory when absent), or `:memory:`. */
  readonly path: string;
  /** The root-results file; default: beside `path`, `alma.db` → `alma.root-results.db`. */
  readonly rootResultsPath?: string;
  /**
   * `full` (default) syncs every commit, so a claim or dispatch that returned survives power loss:
   * durable before effect. `normal` is faster in WAL mode and may lose the last commits on power loss.
   */
  readonly synchronous?: "full" | "normal";
  /** How long a write waits for another connection's lock before failing as unavailable (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /**
   * `each` (default): every store call is its own transaction, durable when it returns, as the
   * store contracts say. `grouped`: writes join one open transaction (each in its own savepoint,
   * so a refused write still rolls back alone) that commits at a durability point — a journal
   * `dispatch`, an admission's end, a sweep, an erasure, `barrier.commit()`, `close()` — so a
   * runner that commits before every effect (the conversation runner does) pays one flush per
   * effect instead of one per write. A failed commit loses every write since the last one: the
   * connection then refuses all writes (`StoreUnavailableError`) until it is reopened.
   */
  readonly commits?: "each" | "grouped";
  /**
   * WAL pages after which a commit checkpoints (SQLite's default 1000); 0 never checkpoints, which
   * lets a benchmark count the WAL's commit frames from outside (every flush).
   */
  readonly walAutoCheckpoint?: number;
  /**
   * Where the root results live: `attached` — a second file attached as `root` (backed up and
   * erased apart, but every transaction that writes it flushes both files); `main` — their own
   * table set (`root_results`) in the main file, one flush per commit. Default: `attached` when a
   * root-results file already exists or `rootResultsPath` is given, else `main`. Either way they
   * are a separate namespace: no step-result statement reads or writes them.
   */
  readonly rootResults?: "attached" | "main";
  /**
   * The deployment's trail key: it keys the marks erased sessions' tombstones carry
   * (`erasedSessionMark`), so nobody without it can test a guessed session id against them. Open
   * the file with the same key every time (the runtime's `sqlite()` always passes its key).
   * Absent: unkeyed marks.
   */
  readonly trailKey?: TrailKey | TrailKeyMaterial;
}

/** Where root results live, as the stores and the migrations name it. */
export interface RootLayout {
  readonly mode: "attached" | "main";
  /** The qualified table. */
  readonly table: string;
  /** The qualified table that records the root migrations applied. */
  readonly versions: string;
}

const ATTACHED: RootLayout = Object.freeze({
  mode: "attached",
  table: "root.results",
  versions: "root.schema_version",
});
const IN_MAIN: RootLayout = Object.freeze({
  mode: "main",
  table: "main.root_results",
  versions: "main.root_schema_version",
});

/** A root migration's SQL for the layout (written for `attached`, re-targeted to the main file's table set). */
function rootSql(layout: RootLayout, sql: string): string {
  if (layout.mode === "attached") return sql;
  return sql
    .replace(
      /\broot\.results(_\w+)?\b/g,
      (_, suffix: string | undefined) => `main.root_results${suffix ?? ""}`,
    )
    .replace(/\bON results \(/g, "ON root_results (");
}

/** One connection, its cached statements and the transaction helpers every store uses. */
export class SqliteDb {
  readonly raw: Database.Database;
  readonly grouped: boolean;
  /** Where this file's root results live. */
  root: RootLayout = ATTACHED;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #immediate: (run: () => unknown) => unknown;
  readonly #nested: (run: () => unknown) => unknown;
  #poisoned: StoreUnavailableError | undefined;
  /** Commits made, for the benchmark's count (the WAL's commit frames are the outside count). */
  commits = 0;
  /** The mark an erased session's tombstones carry in this file (keyed when the file was opened with a key). */
  mark: SessionMarker = sessionMarker();

  constructor(raw: Database.Database, commits: "each" | "grouped" = "each") {
    this.raw = raw;
    this.grouped = commits === "grouped";
    const tx = raw.transaction((run: () => unknown) => run());
    this.#immediate = (run) => tx.immediate(run);
    // Inside an open transaction better-sqlite3 runs a transaction function as a savepoint.
    this.#nested = (run) => tx(run);
  }

  stmt(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.raw.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `fn` inside `BEGIN IMMEDIATE`: the write lock is taken before the first read, so a check
   * (an admission, a fence, an existing id) and the write it guards are one step for every
   * connection to this file. Throws inside roll the whole transaction back.
   */
  write<T>(fn: () => T): T {
    if (this.#poisoned) throw this.#poisoned;
    if (!this.grouped) {
      const out = this.guard(() => this.#immediate(fn) as T);
      this.commits += 1;
      return out;
    }
    return this.guard(() => {
      if (!this.raw.inTransaction) {
        this.raw.prepare("BEGIN IMMEDIATE").run();
        // The durability points are the guarantee; this is the net: no group transaction (and so
        // no write lock) outlives the task that opened it, even when no durability point follows.
        setImmediate(this.#settle);
      }
      return this.#nested(fn) as T;
    });
  }

  readonly #settle = (): void => {
    try {
      this.commit();
    } catch {
      // the connection is poisoned: the next write or commit reports it
    }
  };

  /** A write that is a durability point: in `grouped` mode it commits what is pending with it. */
  durable<T>(fn: () => T): T {
    const out = this.write(fn);
    this.commit();
    return out;
  }

  /**
   * A durability point: commits the open group transaction (a no-op when nothing is pending, or in
   * `each` mode, where every write committed already). A failed commit poisons the connection.
   */
  commit(): void {
    if (this.#poisoned) throw this.#poisoned;
    if (!this.grouped || !this.raw.open || !this.raw.inTransaction) return;
    try {
      this.raw.prepare("COMMIT").run();
      this.commits += 1;
    } catch (error) {
      try {
        if (this.raw.inTransaction) this.raw.prepare("ROLLBACK").run();
      } catch {
        // the rollback's own failure changes nothing: the connection is refused from now on
      }
      this.#poisoned = new StoreUnavailableError(
        "sqlite: a group commit failed; the writes since the last commit are lost — reopen the store",
        error,
      );
      throw this.#poisoned;
    }
  }

  /** Runs a read (or a single self-contained statement), mapping driver failures to contract errors. */
  guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw mapSqliteError(error);
    }
  }

  close(): void {
    if (!this.raw.open) return;
    try {
      if (!this.#poisoned) this.commit();
    } finally {
      this.raw.close();
    }
  }
}

/** Driver failures as contract errors: never a raw SQLITE_* code to the caller. */
export function mapSqliteError(error: unknown): unknown {
  if (error instanceof AlmaError) return error;
  if (isSqliteError(error)) {
    if (error.code.startsWith("SQLITE_CONSTRAINT")) {
      return new ConflictError("store_conflict", "the write conflicts with a stored record");
    }
    return new StoreUnavailableError(`sqlite: ${error.code}`, error);
  }
  if (error instanceof TypeError && /database connection is not open/.test(error.message)) {
    return new StoreUnavailableError("the sqlite store is closed", error);
  }
  return error;
}

export function defaultRootPath(path: string): string {
  if (path === ":memory:") return ":memory:";
  const match = /^(.*?)(\.[^./\\]+)?$/.exec(path);
  return `${match?.[1] ?? path}.root-results${match?.[2] ?? ".db"}`;
}

/** Opens the main file, attaches the root-results file as `root` (or keeps them in the main file), sets WAL and migrates. */
export function openDatabase(options: SqliteStoreOptions): SqliteDb {
  const rootPath = options.rootResultsPath ?? defaultRootPath(options.path);
  const attached =
    (options.rootResults ??
      (options.rootResultsPath !== undefined || options.path === ":memory:" || existsSync(rootPath)
        ? "attached"
        : "main")) === "attached";
  const layout = attached ? ATTACHED : IN_MAIN;
  for (const file of attached ? [options.path, rootPath] : [options.path])
    if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const raw = new (betterSqlite3())(options.path);
  try {
    raw.pragma(`busy_timeout = ${Math.max(0, Math.trunc(options.busyTimeoutMs ?? 5000))}`);
    if (attached) raw.prepare("ATTACH DATABASE ? AS root").run(rootPath);
    for (const schema of attached ? ["main", "root"] : ["main"]) {
      raw.pragma(`${schema}.journal_mode = WAL`);
      raw.pragma(`${schema}.synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`);
      // Deleted content is overwritten in the pages, so an erasure leaves nothing in the file's bytes.
      raw.pragma(`${schema}.secure_delete = ON`);
    }
    raw.pragma("foreign_keys = ON");
    if (options.walAutoCheckpoint !== undefined)
      raw.pragma(`wal_autocheckpoint = ${Math.max(0, Math.trunc(options.walAutoCheckpoint))}`);
    migrate(raw, "main", MAIN_MIGRATIONS);
    migrate(
      raw,
      layout.versions,
      ROOT_MIGRATIONS.map((step) => ({ ...step, sql: rootSql(layout, step.sql) })),
    );
  } catch (error) {
    raw.close();
    throw mapSqliteError(error);
  }
  const db = new SqliteDb(raw, options.commits);
  db.root = layout;
  db.mark = sessionMarker(options.trailKey);
  return db;
}

/** Applies the steps newer than the schema's recorded version, each in its own immediate transaction. */
export function migrate(
  raw: Database.Database,
  schema: "main" | "root" | RootLayout["versions"],
  steps: readonly Migration[],
): void {
  const versions = versionsTable(schema);
  raw.exec(
    `CREATE TABLE IF NOT EXISTS ${versions} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
  );
  const latest = steps[steps.length - 1]?.version ?? 0;
  const current = schemaVersion(raw, schema);
  if (current > latest) {
    throw new StoreUnavailableError(
      `the ${schema} database is at schema version ${current}, newer than this build's ${latest}`,
    );
  }
  // Every step not yet recorded, in version order, even below the recorded maximum: versions are
  // reserved per branch, so a file may hold 4 before 3 lands (each step depends only on lower ones it names).
  const has = raw.prepare(`SELECT 1 FROM ${versions} WHERE version = ?`);
  for (const step of steps) {
    const apply = raw.transaction(() => {
      // Re-read under the write lock: another process may have applied the step meanwhile.
      if (has.get(step.version)) return;
      raw.exec(step.sql);
      raw
        .prepare(`INSERT INTO ${versions} (version, name) VALUES (?, ?)`)
        .run(step.version, step.name);
    });
    if (!has.get(step.version)) apply.immediate();
  }
}

/** `main` and `root` name their own `schema_version`; a qualified table names itself. */
function versionsTable(schema: string): string {
  return schema === "main" || schema === "root" ? `${schema}.schema_version` : schema;
}

export function schemaVersion(
  raw: Database.Database,
  schema: "main" | "root" | RootLayout["versions"],
): number {
  const row = raw
    .prepare(`SELECT COALESCE(MAX(version), 0) AS version FROM ${versionsTable(schema)}`)
    .get() as { version: number };
  return row.version;
}
