// A worker process of `npm run bench:durable`: one store composition of its own (or a floor
// connection) on the shared SQLite file or PostgreSQL database; see protocol.ts for its life.
//   argv[2]: JSON WorkerSpec
import { memory, postgres, type Runtime, sqlite } from "@alma-harness/runtime";
import pg from "pg";
import { pgFloorTx, sqliteFloor } from "../kit/floor.js";
import { runScriptedTurn, scriptedConfig } from "../kit/scripted.js";
import { sqliteStatements } from "../kit/sqlite-counts.js";
import type { FromWorker, ToWorker, WorkerResult, WorkerSpec } from "./protocol.js";

const spec = JSON.parse(process.argv[2] ?? "{}") as WorkerSpec;
const config = scriptedConfig("park");

/** What the loop drives: one unit (a turn, or a floor transaction) per `run`. */
interface Target {
  run(i: number): Promise<void>;
  roundTrips(): number | undefined;
  close(): Promise<void>;
}

async function openRuntime(): Promise<Runtime> {
  if (spec.store === "memory") return memory(config);
  if (spec.store === "sqlite")
    return sqlite({ ...config, store: { path: spec.path!, walAutoCheckpoint: 0 } });
  const store = {
    connectionString: spec.url!,
    schema: spec.schema!,
    rootSchema: `${spec.schema}_root`,
  };
  return postgres({ ...config, store });
}

async function openTarget(tag: string): Promise<Target> {
  if (spec.kind === "alma") {
    const rt = await openRuntime();
    const counted = rt.stores as unknown as { roundTripCount?: () => number };
    return {
      run: (i) => runScriptedTurn(rt, `${tag}-${process.pid}-${i}`, `${tag}-${process.pid}-${i}`),
      roundTrips: () => counted.roundTripCount?.(),
      close: () => rt.close(),
    };
  }
  if (spec.store === "sqlite") {
    const floor = sqliteFloor(spec.path!, 0);
    return {
      run: async () => floor.tx(1),
      roundTrips: () => undefined,
      close: async () => floor.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: spec.url!, max: Math.min(spec.streams, 10) });
  const table = `${spec.schema}.floor`;
  return {
    run: () => pgFloorTx(pool, table, 1),
    roundTrips: () => undefined,
    close: () => pool.end(),
  };
}

/** Units per turn: a floor turn is as many transactions as the store's turn commits. */
const units = (turns: number) =>
  spec.kind === "floor" ? Math.round(turns * (spec.commitsPerTurn ?? 1)) : turns;

async function drive(target: Target, count: number): Promise<number[]> {
  const latencies: number[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(spec.streams, count) }, async () => {
      for (let i = next++; i < count; i = next++) {
        const start = performance.now();
        await target.run(i);
        latencies[i] = performance.now() - start;
      }
    }),
  );
  return latencies;
}

const send = (message: FromWorker) => process.send?.(message);
const next = (type: ToWorker["type"]) =>
  new Promise<void>((resolve) => {
    const on = (message: ToWorker) => {
      if (message.type !== type) return;
      process.off("message", on);
      resolve();
    };
    process.on("message", on);
  });

async function measure(): Promise<{ result: WorkerResult; target: Target }> {
  const target = await openTarget(spec.tag);
  const statements = { ...sqliteStatements };
  const roundTrips = target.roundTrips();
  const cpu = process.cpuUsage();
  const startMs = performance.timeOrigin + performance.now();
  const latenciesMs = await drive(target, units(spec.turns));
  const endMs = performance.timeOrigin + performance.now();
  const used = process.cpuUsage(cpu);
  const after = target.roundTrips();
  const result: WorkerResult = {
    turns: spec.turns,
    startMs,
    endMs,
    cpuUs: used.user + used.system,
    latenciesMs,
    ...(spec.store === "sqlite"
      ? {
          sqliteStatements: {
            all: sqliteStatements.all - statements.all,
            writes: sqliteStatements.writes - statements.writes,
            control: sqliteStatements.control - statements.control,
          },
        }
      : {}),
    ...(after !== undefined && roundTrips !== undefined ? { roundTrips: after - roundTrips } : {}),
  };
  return { result, target };
}

try {
  const go = next("go");
  if (spec.warmup > 0) {
    const warm = await openTarget(`${spec.tag}w`);
    await drive(warm, units(spec.warmup));
    await warm.close();
  }
  send({ type: "ready" });
  await go;
  const closing = next("close");
  const { result, target } = await measure();
  send({ type: "done", result });
  await closing;
  await target.close();
  process.disconnect?.();
} catch (error) {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  // Whatever is still open (a pool, a file) must not keep the process alive.
  process.send?.({ type: "error", message } satisfies FromWorker, () => process.exit(1));
}
