// npm run bench:store — a two-step tool turn with the scripted model on memory, SQLite and
// PostgreSQL (when ALMA_TEST_DATABASE_URL is set) at 1, 8 and 64 concurrent sessions: turns per
// second, commits per turn counted from outside (SQLite: the commit frames in the WAL files, each
// a flush; PostgreSQL: the database's xact_commit once the pools have closed and their backends
// reported), write statements per turn, and the floor — the same number of plain INSERT
// transactions on the same database — as a ratio.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import pg from "pg";
import { benchConfig } from "./config.js";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

// Count SQLite write statements (the commits are counted from outside, in the WAL).
const counter = { writes: 0 };
{
  const probe = new Database(":memory:");
  const Statement = Object.getPrototypeOf(probe.prepare("select 1")) as {
    run: (...a: unknown[]) => unknown;
  };
  const run = Statement.run;
  Statement.run = function (this: { reader: boolean }, ...args: unknown[]) {
    if (!this.reader) counter.writes += 1;
    return run.apply(this, args);
  };
  probe.close();
}

/** Commit frames in a WAL file (frame header bytes 4-7: the database size after a commit, else 0), with matching salts. */
function walCommits(path: string): number {
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

class ScriptedByRequest implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const afterTool = request.messages.at(-1)?.blocks.some((b) => b.type === "tool_result");
    const script = afterTool
      ? scriptedText("done")
      : scriptedToolCall({
          id: `c${Math.random().toString(36).slice(2)}`,
          name: "note",
          input: { text: "x" },
        });
    yield* script.events;
  }
}

const note = defineTool({
  name: "note",
  description: "Takes a note.",
  input: { type: "object" },
  handler: () => "ok",
});
// `BENCH_ASKS=park`: the host's default since issue 25 (asks park, each step boundary checkpointed).
const config: RuntimeConfig = {
  ...benchConfig(new ScriptedByRequest(), [note], 4),
  ...(process.env.BENCH_ASKS === "park" ? { asks: "park" as const } : {}),
};

async function drive(rt: Runtime, sessions: number, turns: number, tag: string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (;;) {
        const i = next++;
        if (i >= turns) return;
        const view = await rt.runner.runTurn({
          scope: { org: "bench", uid: "u" },
          sessionId: `${tag}-${s}`,
          idempotencyKey: `${tag}-${i}`,
          input: "hi",
          intent: { tier: "balanced", sensitivity: "internal" },
        });
        if (view.status !== "completed") throw new Error(`${tag} turn ${i}: ${view.status}`);
      }
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function sqliteFloor(
  path: string,
  statements: number,
  transactions: number,
  turns: number,
): number {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("create table if not exists floor (id integer primary key, body text)");
  const insert = db.prepare("insert into floor (body) values (?)");
  const perTx = Math.max(1, Math.round(statements / transactions));
  const tx = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run("x".repeat(200));
  });
  const before = counter.writes;
  const start = process.hrtime.bigint();
  for (let t = 0; t < turns * transactions; t++) tx.immediate(perTx);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  counter.writes = before;
  db.close();
  return seconds;
}

async function pgFloor(
  url: string,
  statements: number,
  transactions: number,
  turns: number,
  sessions: number,
): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: Math.min(sessions, 10) });
  await pool.query("create table if not exists bench_floor (id bigserial primary key, body text)");
  const perTx = Math.max(1, Math.round(statements / transactions));
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: sessions }, async () => {
      for (;;) {
        if (next++ >= turns * transactions) return;
        const client = await pool.connect();
        try {
          await client.query("BEGIN");
          for (let i = 0; i < perTx; i++)
            await client.query("insert into bench_floor (body) values ($1)", ["x".repeat(200)]);
          await client.query("COMMIT");
        } finally {
          client.release();
        }
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await pool.query("drop table bench_floor");
  await pool.end();
  return seconds;
}

async function pgCommitsNow(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ n: string }>(
    "select xact_commit::text as n from pg_stat_database where datname = current_database()",
  );
  await client.end();
  return Number(rows[0]?.n ?? 0);
}

/**
 * The database's committed transactions, read once every pool has closed: a backend reports its
 * counts when it exits, so the figure is read until it stops moving. Each read is a transaction of
 * its own, which `reads` counts so the caller can take them out.
 */
async function pgCommits(url: string): Promise<{ readonly n: number; readonly reads: number }> {
  let last = await pgCommitsNow(url);
  let reads = 1;
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const n = await pgCommitsNow(url);
    reads += 1;
    // Only the previous read itself moved it: everything else has reported.
    if (n - last <= 1) return { n, reads };
    last = n;
  }
  return { n: last, reads };
}

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const rows: string[] = [];
const row = (...cells: (string | number)[]) =>
  rows.push(
    cells
      .map((c, i) =>
        String(c)
          .padStart(i === 0 ? 0 : 12)
          .padEnd(i === 0 ? 16 : 0),
      )
      .join(" "),
  );
row("store", "sessions", "turns/s", "commits/turn", "writes/turn", "floor ×");
// commits/turn: SQLite counts flushes (a transaction that writes both files is two), PostgreSQL transactions.
for (const sessions of [1, 8, 64]) {
  const rt = memory(config);
  const seconds = await drive(rt, sessions, TURNS, `m${sessions}`);
  row("memory", sessions, (TURNS / seconds).toFixed(0), "-", "-", "-");
}
const dir = mkdtempSync(join(tmpdir(), "alma-bench-"));
for (const commits of ["each", "grouped"] as const) {
  for (const sessions of [1, 8, 64]) {
    const path = join(dir, `bench-${commits}-${sessions}.db`);
    const rt = sqlite({ ...config, store: { path, commits, walAutoCheckpoint: 0 } });
    const wals = [`${path}-wal`, `${path.replace(/\.db$/, "")}.root-results.db-wal`];
    const flushed = () => wals.reduce((sum, wal) => sum + walCommits(wal), 0);
    const before = { flushes: flushed(), writes: counter.writes };
    const seconds = await drive(rt, sessions, TURNS, `s${commits}${sessions}`);
    // Read before closing: the last connection to close checkpoints the WAL away.
    await new Promise((resolve) => setImmediate(resolve));
    const flushes = (flushed() - before.flushes) / TURNS;
    await rt.close();
    const writes = (counter.writes - before.writes) / TURNS;
    const floor = sqliteFloor(
      join(dir, `floor-${commits}-${sessions}.db`),
      Math.round(writes),
      Math.max(1, Math.round(flushes)),
      TURNS,
    );
    row(
      `sqlite ${commits}`,
      sessions,
      (TURNS / seconds).toFixed(0),
      flushes.toFixed(1),
      writes.toFixed(1),
      (seconds / floor).toFixed(2),
    );
  }
}
rmSync(dir, { recursive: true, force: true });
const url = process.env.ALMA_TEST_DATABASE_URL;
if (url) {
  for (const sessions of [1, 8, 64]) {
    const schema = `bench_${process.pid}_${sessions}`;
    const rt = await postgres({
      ...config,
      store: { connectionString: url, schema, rootSchema: `${schema}_root`, migrate: true },
    });
    const before = await pgCommits(url);
    const seconds = await drive(rt, sessions, TURNS, `p${sessions}`);
    await rt.close();
    const after = await pgCommits(url);
    const commits = (after.n - before.n - after.reads) / TURNS;
    const floor = await pgFloor(
      url,
      Math.round(commits),
      Math.max(1, Math.round(commits)),
      TURNS,
      sessions,
    );
    row(
      "postgres",
      sessions,
      (TURNS / seconds).toFixed(0),
      commits.toFixed(1),
      "-",
      (seconds / floor).toFixed(2),
    );
  }
} else
  rows.push('postgres   skipped: ALMA_TEST_DATABASE_URL is not set (eval "$(npm run -s db:up)")');
console.log(`two-step tool turns with the scripted model, ${TURNS} turns per row`);
console.log(rows.join("\n"));
