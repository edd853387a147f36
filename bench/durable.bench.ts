// npm run bench:durable — issue 26's benchmark: W2 turns (the scripted instant model: one tool
// call, then the answer; a new session per turn; the runtime's own composition with the host's
// default `asks: "park"`) on memory, SQLite (a temporary file) and PostgreSQL
// (ALMA_BENCH_DATABASE_URL, else a cluster of its own from scripts/pg-up.sh), at 1 process × 1
// stream and at BENCH_PROCESSES × BENCH_STREAMS (4 × 16), each process a forked worker with its
// own composition on the same file or database (memory: each process its own stores). For each:
// turns/s, p50 and p99 turn latency, CPU per turn in the worker processes, statements, commits and
// flushes per turn (counted outside the stores: see kit/), and the plain-INSERT floor at the same
// commits per turn and shape, with the ratio. Prints markdown; see bench/RESULTS.md.
//
//   BENCH_TURNS     measured turns per row, over all its processes (default 600)
//   BENCH_WARMUP    warm-up turns per process before each row (default 100)
//   BENCH_PROCESSES, BENCH_STREAMS   the concurrent shape (default 4 and 16)
//   BENCH_STORES    which stores, comma-separated (default memory,sqlite,postgres)
//   BENCH_TOOL      the W2 tool: a pure `lookup` (default: no commit of its own) or `effect` (`note`)
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, release, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { PgServerCounts } from "./kit/pg-counts.js";
import { closeDatabase, type Database, openDatabase } from "./durable/cluster.js";
import { running } from "./durable/phase.js";
import {
  countNotes,
  MAIN_HEADER,
  mainRow,
  markdownTable,
  type Phase,
  statementTable,
} from "./durable/report.js";
import {
  memoryRun,
  postgresRun,
  type Settings,
  sqliteRun,
  type StoreRun,
} from "./durable/stores.js";

const numberOf = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number`);
  return value;
};
const settings: Settings = {
  turns: numberOf("BENCH_TURNS", 600),
  warmup: numberOf("BENCH_WARMUP", 100),
  shapes: [
    { processes: 1, streams: 1 },
    { processes: numberOf("BENCH_PROCESSES", 4), streams: numberOf("BENCH_STREAMS", 16) },
  ],
};
const stores = new Set((process.env.BENCH_STORES ?? "memory,sqlite,postgres").split(","));
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(" ");

const dir = mkdtempSync(join(tmpdir(), "alma-bench-durable-"));
let database: Database | undefined;
let stopping = false;
/** Ends this run's workers (by pid) and its own cluster, and removes its SQLite files. */
async function cleanUp(): Promise<void> {
  for (const child of running) child.kill();
  rmSync(dir, { recursive: true, force: true });
  if (database) await closeDatabase(database).catch((e) => console.error(`pg-down: ${e}`));
  database = undefined;
}
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void cleanUp().finally(() => process.exit(130));
  });

async function dropSchemas(url: string, schemas: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (const schema of schemas) await client.query(`drop schema if exists ${schema} cascade`);
  await client.end();
}

async function postgresPart(lines: string[]): Promise<StoreRun> {
  database = await openDatabase();
  lines.push(`PostgreSQL: ${database.origin}`);
  const server = await PgServerCounts.open(database.url, database.dir !== undefined);
  const schemas: string[] = [];
  try {
    lines.push(
      `PostgreSQL ${await server.setting("server_version")}, autovacuum ${await server.setting("autovacuum")} (when on, its transactions in the bench database count as commits); statements ${
        server.statements
          ? `from pg_stat_statements (track_utility ${await server.setting("pg_stat_statements.track_utility")})`
          : "not counted: pg_stat_statements is not preloaded, or not installed in the maintenance database (create extension pg_stat_statements there)"
      }`,
    );
    return await postgresRun(settings, database.url, server, schemas);
  } finally {
    await server.close();
    await dropSchemas(database.url, schemas).catch((e) => lines.push(`schemas not dropped: ${e}`));
  }
}

const started = new Date();
const lines = [
  `node ${process.version}, ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), Linux ${release()}, load average ${load()} at the start`,
  `${settings.turns} measured turns per row, ${settings.warmup} warm-up turns per process`,
];
const runs: StoreRun[] = [];
try {
  if (stores.has("memory")) runs.push(await memoryRun(settings));
  if (stores.has("sqlite")) {
    lines.push(`SQLite: temporary files in ${dir} (WAL, synchronous FULL, grouped commits)`);
    runs.push(await sqliteRun(settings, dir));
  }
  if (stores.has("postgres")) runs.push(await postgresPart(lines));
} finally {
  await cleanUp();
}
const phases: Phase[] = runs.flatMap((r) => r.phases);
const seconds = ((Date.now() - started.getTime()) / 1000).toFixed(0);
lines.push(`load average ${load()} at the end, ${seconds} s in all`);
console.log(lines.join("\n"));
console.log(`\n${markdownTable(MAIN_HEADER, phases.map(mainRow))}`);
const details = statementTable(phases);
if (details) console.log(`\n${details}`);
for (const run of runs) {
  if (run.openCost) {
    const { commits, flushes, statements } = run.openCost;
    const cost = JSON.stringify({ commits, flushes, statements });
    console.log(
      `\n${run.store}: one open of the composition counted ${cost}, taken out per process`,
    );
  }
  for (const failure of run.failures) console.log(`\nFAILED ${failure}`);
}
for (const note of countNotes(phases)) console.log(`\nnote: ${note}`);
if (runs.some((r) => r.failures.length > 0)) process.exitCode = 1;
