// npm run bench:store — a two-step tool turn with the scripted model on memory, SQLite and
// PostgreSQL (when ALMA_TEST_DATABASE_URL is set) at 1, 8 and 64 concurrent sessions: turns per
// second, commits per turn counted from outside (SQLite: the commit frames in the WAL files, each
// a flush; PostgreSQL: the server's count, see kit/pg-counts.ts), write statements per turn, and
// the floor — the same number of plain INSERT transactions on the same database — as a ratio.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memory, postgres, type Runtime, sqlite } from "@alma-harness/runtime";
import pg from "pg";
import { pgFloorTable, pgFloorTx, sqliteFloor } from "./kit/floor.js";
import { PgServerCounts, pgCounts } from "./kit/pg-counts.js";
import { runScriptedTurn, scriptedConfig } from "./kit/scripted.js";
import { flushes as flushed, sqliteStatements, storeWals } from "./kit/sqlite-counts.js";

// `BENCH_ASKS=park`: the host's default since issue 25 (asks park, each step boundary checkpointed).
const config = scriptedConfig(process.env.BENCH_ASKS === "park" ? "park" : "wait");

async function drive(rt: Runtime, sessions: number, turns: number, tag: string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (;;) {
        const i = next++;
        if (i >= turns) return;
        await runScriptedTurn(rt, `${tag}-${s}`, `${tag}-${i}`);
      }
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/** Seconds for `turns` floor turns of `transactions` transactions, `statements / transactions` INSERTs each. */
function sqliteFloorSeconds(
  path: string,
  statements: number,
  transactions: number,
  turns: number,
): number {
  const floor = sqliteFloor(path);
  const perTx = Math.max(1, Math.round(statements / transactions));
  const before = sqliteStatements.writes;
  const start = process.hrtime.bigint();
  for (let t = 0; t < turns * transactions; t++) floor.tx(perTx);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  sqliteStatements.writes = before;
  floor.close();
  return seconds;
}

async function pgFloorSeconds(
  url: string,
  statements: number,
  transactions: number,
  turns: number,
  sessions: number,
): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: Math.min(sessions, 10) });
  await pgFloorTable(pool, "bench_floor");
  const perTx = Math.max(1, Math.round(statements / transactions));
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: sessions }, async () => {
      while (next++ < turns * transactions) await pgFloorTx(pool, "bench_floor", perTx);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  await pool.query("drop table bench_floor");
  await pool.end();
  return seconds;
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
    const wals = storeWals(path);
    const before = { flushes: flushed(wals), writes: sqliteStatements.writes };
    const seconds = await drive(rt, sessions, TURNS, `s${commits}${sessions}`);
    // Read before closing: the last connection to close checkpoints the WAL away.
    await new Promise((resolve) => setImmediate(resolve));
    const flushes = (flushed(wals) - before.flushes) / TURNS;
    await rt.close();
    const writes = (sqliteStatements.writes - before.writes) / TURNS;
    const floor = sqliteFloorSeconds(
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
  const server = await PgServerCounts.open(url);
  for (const sessions of [1, 8, 64]) {
    const schema = `bench_${process.pid}_${sessions}`;
    const store = { connectionString: url, schema, rootSchema: `${schema}_root` };
    // Migrate, then close: the count is read with no pool open (the open's schema checks count).
    await (await postgres({ ...config, store: { ...store, migrate: true } })).close();
    const before = await server.read();
    const rt = await postgres({ ...config, store });
    const seconds = await drive(rt, sessions, TURNS, `p${sessions}`);
    await rt.close();
    const commits = pgCounts(before, await server.read()).commits / TURNS;
    const floor = await pgFloorSeconds(
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
  await server.close();
} else
  rows.push('postgres   skipped: ALMA_TEST_DATABASE_URL is not set (eval "$(npm run -s db:up)")');
console.log(`two-step tool turns with the scripted model, ${TURNS} turns per row`);
console.log(rows.join("\n"));
