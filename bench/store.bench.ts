// npm run bench:store — a two-step tool turn with the scripted model on memory, SQLite and
// PostgreSQL (when ALMA_TEST_DATABASE_URL is set) at 1, 8 and 64 concurrent sessions: turns per
// second, database commits and write statements per turn, and the floor — the same number of plain
// INSERT statements in the same number of transactions on the same database — as a ratio.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineTool, type ModelClient, type ModelRequest, type ModelStreamEvent } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { memory, postgres, type Runtime, type RuntimeConfig, sqlite } from "@alma-harness/runtime";
import pg from "pg";

const require = createRequire(import.meta.url);
const Database = require("better-sqlite3") as typeof import("better-sqlite3");

// Count SQLite commits: each immediate transaction, and each write statement run outside one.
const counter = { commits: 0, writes: 0 };
{
  const probe = new Database(":memory:");
  const Statement = Object.getPrototypeOf(probe.prepare("select 1")) as { run: (...a: unknown[]) => unknown };
  const run = Statement.run;
  Statement.run = function (this: { reader: boolean; database: { inTransaction: boolean } }, ...args: unknown[]) {
    if (!this.reader) {
      counter.writes += 1;
      if (!this.database.inTransaction) counter.commits += 1;
    }
    return run.apply(this, args);
  };
  const proto = Object.getPrototypeOf(probe) as { transaction: (fn: (...a: unknown[]) => unknown) => unknown };
  const transaction = proto.transaction;
  let depth = 0;
  proto.transaction = function (this: unknown, fn: (...a: unknown[]) => unknown) {
    return transaction.call(this, function (this: unknown, ...a: unknown[]) {
      if (depth === 0) counter.commits += 1;
      depth += 1;
      try {
        return fn.apply(this, a);
      } finally {
        depth -= 1;
      }
    });
  };
  probe.close();
}

class ScriptedByRequest implements ModelClient {
  readonly id = "fake";
  readonly provider = "fake";
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    const afterTool = request.messages.at(-1)?.blocks.some((b) => b.type === "tool_result");
    const script = afterTool ? scriptedText("done") : scriptedToolCall({ id: `c${Math.random().toString(36).slice(2)}`, name: "note", input: { text: "x" } });
    yield* script.events;
  }
}

const note = defineTool({ name: "note", description: "Takes a note.", input: { type: "object" }, handler: () => "ok" });
const config: RuntimeConfig = {
  clients: [new ScriptedByRequest()],
  policy: { resolve: () => ({ clientId: "fake", model: "m", maxOutputTokens: 256, cache: false }) },
  prompt: "bench",
  tools: [note],
  prices: { version: "p", models: { m: { rates: { input: 1, output: 2 } } } },
  policyVersion: "p",
  priceVersion: "p",
  configRevision: "r",
  resultRetentionMs: 3_600_000,
  runTimeoutMs: 600_000,
  maxCalls: 4,
  maxInputChars: 10_000,
};

async function drive(rt: Runtime, sessions: number, turns: number, tag: string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (;;) {
        const i = next++;
        if (i >= turns) return;
        const view = await rt.runner.runTurn({ scope: { org: "bench", uid: "u" }, sessionId: `${tag}-${s}`, idempotencyKey: `${tag}-${i}`, input: "hi", intent: { tier: "balanced", sensitivity: "internal" } });
        if (view.status !== "completed") throw new Error(`${tag} turn ${i}: ${view.status}`);
      }
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function sqliteFloor(path: string, statements: number, transactions: number, turns: number): number {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.exec("create table if not exists floor (id integer primary key, body text)");
  const insert = db.prepare("insert into floor (body) values (?)");
  const perTx = Math.max(1, Math.round(statements / transactions));
  const tx = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run("x".repeat(200));
  });
  const before = { ...counter };
  const start = process.hrtime.bigint();
  for (let t = 0; t < turns * transactions; t++) tx.immediate(perTx);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  counter.commits = before.commits;
  counter.writes = before.writes;
  db.close();
  return seconds;
}

async function pgFloor(url: string, statements: number, transactions: number, turns: number, sessions: number): Promise<number> {
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
          for (let i = 0; i < perTx; i++) await client.query("insert into bench_floor (body) values ($1)", ["x".repeat(200)]);
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

async function pgCommits(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ n: string }>("select xact_commit::text as n from pg_stat_database where datname = current_database()");
  await client.end();
  return Number(rows[0]?.n ?? 0);
}

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const rows: string[] = [];
const row = (...cells: (string | number)[]) => rows.push(cells.map((c, i) => String(c).padStart(i === 0 ? 0 : 12).padEnd(i === 0 ? 10 : 0)).join(" "));
row("store", "sessions", "turns/s", "commits/turn", "writes/turn", "floor ×");
for (const sessions of [1, 8, 64]) {
  const rt = memory(config);
  const seconds = await drive(rt, sessions, TURNS, `m${sessions}`);
  row("memory", sessions, (TURNS / seconds).toFixed(0), "-", "-", "-");
}
const dir = mkdtempSync(join(tmpdir(), "alma-bench-"));
for (const sessions of [1, 8, 64]) {
  const rt = sqlite({ ...config, store: { path: join(dir, `bench-${sessions}.db`) } });
  const before = { ...counter };
  const seconds = await drive(rt, sessions, TURNS, `s${sessions}`);
  const commits = (counter.commits - before.commits) / TURNS;
  const writes = (counter.writes - before.writes) / TURNS;
  await rt.close();
  const floor = sqliteFloor(join(dir, `floor-${sessions}.db`), Math.round(writes), Math.max(1, Math.round(commits)), TURNS);
  row("sqlite", sessions, (TURNS / seconds).toFixed(0), commits.toFixed(1), writes.toFixed(1), (seconds / floor).toFixed(2));
}
rmSync(dir, { recursive: true, force: true });
const url = process.env.ALMA_TEST_DATABASE_URL;
if (url) {
  for (const sessions of [1, 8, 64]) {
    const schema = `bench_${process.pid}_${sessions}`;
    const rt = await postgres({ ...config, store: { connectionString: url, schema, rootSchema: `${schema}_root`, migrate: true } });
    const before = await pgCommits(url);
    const seconds = await drive(rt, sessions, TURNS, `p${sessions}`);
    const commits = ((await pgCommits(url)) - before) / TURNS;
    await rt.close();
    const floor = await pgFloor(url, Math.round(commits), Math.max(1, Math.round(commits)), TURNS, sessions);
    row("postgres", sessions, (TURNS / seconds).toFixed(0), commits.toFixed(1), "-", (seconds / floor).toFixed(2));
  }
} else rows.push("postgres   skipped: ALMA_TEST_DATABASE_URL is not set (eval \"$(npm run -s db:up)\")");
console.log(`two-step tool turns with the scripted model, ${TURNS} turns per row`);
console.log(rows.join("\n"));
