// How the benchmarks count PostgreSQL's work: on the server, for the bench database alone, read
// from another database of the same server (the maintenance database `postgres`) so the reads
// never count themselves.
//
// - Commits: the bench database's `xact_commit` in pg_stat_database, less its `sessions`: every
//   new connection's startup is one committed transaction of its own (PostgreSQL 15: a connection
//   that sends nothing adds one), not the work's. A backend reports its counts when it exits (an
//   idle one may hold them for seconds), so a read waits until the bench database has no backend
//   left: close every pool first.
// - Statements: pg_stat_statements' `calls` for the bench database (top-level statements, each a
//   round trip; utility statements such as BEGIN, COMMIT and SAVEPOINT included, as
//   `pg_stat_statements.track_utility` is on by default), when the server preloads it.
import pg from "pg";

export interface PgSnapshot {
  readonly commits: number;
  readonly rollbacks: number;
  readonly sessions: number;
  /** Calls by the statement's first keyword (`select`, `insert`, `commit`, …); absent without pg_stat_statements. */
  readonly statements?: ReadonlyMap<string, number>;
  /** pg_stat_statements entries evicted so far (a count is only whole while this does not move). */
  readonly evicted?: number;
}

export interface PgCounts {
  readonly commits: number;
  readonly rollbacks: number;
  readonly statements?: Readonly<Record<string, number>>;
  readonly evicted?: number;
}

/** Statements that only open, close or mark a transaction. */
export const TRANSACTION_CONTROL = [
  "begin",
  "start",
  "commit",
  "end",
  "rollback",
  "savepoint",
  "release",
];

/** What happened between two snapshots (see the module comment for each rule). */
export function pgCounts(before: PgSnapshot, after: PgSnapshot): PgCounts {
  const counts = {
    commits: after.commits - before.commits - (after.sessions - before.sessions),
    rollbacks: after.rollbacks - before.rollbacks,
  };
  if (!before.statements || !after.statements) return counts;
  const statements: Record<string, number> = {};
  for (const [kind, calls] of after.statements) {
    const delta = calls - (before.statements.get(kind) ?? 0);
    if (delta !== 0) statements[kind] = delta;
  }
  return { ...counts, statements, evicted: (after.evicted ?? 0) - (before.evicted ?? 0) };
}

/** Reads the bench database's counters from the maintenance database of the same server. */
export class PgServerCounts {
  readonly #reader: pg.Client;
  readonly #database: string;
  readonly #oid: number;
  readonly statements: boolean;

  private constructor(reader: pg.Client, database: string, oid: number, statements: boolean) {
    this.#reader = reader;
    this.#database = database;
    this.#oid = oid;
    this.statements = statements;
  }

  /**
   * `url` names the bench database. With `createExtension`, pg_stat_statements is created in the
   * maintenance database when the server preloads it (only do that on a server of your own).
   */
  static async open(url: string, createExtension = false): Promise<PgServerCounts> {
    const bench = new pg.Client({ connectionString: url });
    await bench.connect();
    const { rows } = await bench
      .query<{ name: string; oid: number }>(
        "select current_database() as name, oid::int as oid from pg_database where datname = current_database()",
      )
      .finally(() => bench.end());
    const { name, oid } = rows[0]!;
    const maintenance = new URL(url);
    maintenance.pathname = "/postgres";
    const reader = new pg.Client({ connectionString: maintenance.toString() });
    // A connection lost between reads (the server stopping) fails the next read, not the process.
    reader.on("error", () => {});
    await reader.connect();
    return new PgServerCounts(reader, name, oid, await statementsReady(reader, createExtension));
  }

  /** Waits until the bench database has no backend (each has reported), then reads. */
  async read(timeoutMs = 60_000): Promise<PgSnapshot> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { rows } = await this.#reader.query<Record<string, string>>(
        "select numbackends::text as backends, xact_commit::text as commits, xact_rollback::text as rollbacks, sessions::text as sessions from pg_stat_database where datname = $1",
        [this.#database],
      );
      const row = rows[0]!;
      if (Number(row.backends) === 0) {
        const counts = {
          commits: Number(row.commits),
          rollbacks: Number(row.rollbacks),
          sessions: Number(row.sessions),
        };
        return this.statements ? { ...counts, ...(await this.#statementCalls()) } : counts;
      }
      if (Date.now() > deadline)
        throw new Error(`${this.#database} still has ${row.backends} backends: close its pools`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async #statementCalls(): Promise<Pick<PgSnapshot, "statements" | "evicted">> {
    const { rows } = await this.#reader.query<{ kind: string; calls: string }>(
      `select lower(substring(ltrim(query) from '^[A-Za-z]+')) as kind, sum(calls)::text as calls
         from pg_stat_statements where dbid = $1 group by 1`,
      [this.#oid],
    );
    const info = await this.#reader.query<{ dealloc: string }>(
      "select dealloc::text as dealloc from pg_stat_statements_info",
    );
    const statements = new Map(rows.map((r) => [r.kind ?? "other", Number(r.calls)]));
    return { statements, evicted: Number(info.rows[0]?.dealloc ?? 0) };
  }

  /** A server setting (`server_version`, `pg_stat_statements.track_utility`, …), or undefined. */
  async setting(name: string): Promise<string | undefined> {
    const { rows } = await this.#reader.query<{ setting: string }>(
      "select setting from pg_settings where name = $1",
      [name],
    );
    return rows[0]?.setting;
  }

  close(): Promise<void> {
    return this.#reader.end();
  }
}

/** Whether pg_stat_statements can be read from the maintenance database (created there if asked). */
async function statementsReady(reader: pg.Client, create: boolean): Promise<boolean> {
  const preload = await reader.query<{ setting: string }>(
    "select setting from pg_settings where name = 'shared_preload_libraries'",
  );
  if (!/\bpg_stat_statements\b/.test(preload.rows[0]?.setting ?? "")) return false;
  if (create) await reader.query("create extension if not exists pg_stat_statements");
  const installed = await reader.query(
    "select 1 from pg_extension where extname = 'pg_stat_statements'",
  );
  return (installed.rowCount ?? 0) > 0;
}
