// The durable benchmark's phases per store: the Alma W2 phase at each shape, then the plain-INSERT
// floor at the same shape and the same commits per turn, each counted by the store's meter.
import { join } from "node:path";
import { postgres, sqlite } from "@alma-harness/runtime";
import pg from "pg";
import { pgFloorTable, sqliteFloor } from "../kit/floor.js";
import {
  type PgCounts,
  type PgServerCounts,
  type PgSnapshot,
  pgCounts,
  TRANSACTION_CONTROL,
} from "../kit/pg-counts.js";
import { scriptedConfig } from "../kit/scripted.js";
import { flushes, storeWals } from "../kit/sqlite-counts.js";
import { type Meter, type PhaseSpec, runPhase } from "./phase.js";
import type { StoreKind, WorkerResult } from "./protocol.js";
import type { Counted, Phase } from "./report.js";

export interface Shape {
  readonly processes: number;
  readonly streams: number;
}

export interface Settings {
  readonly turns: number;
  readonly warmup: number;
  readonly shapes: readonly Shape[];
}

/** What a store contributes: its phases in run order, and what failed (reported, never hidden). */
export interface StoreRun {
  readonly store: StoreKind;
  readonly phases: Phase[];
  readonly failures: string[];
  /** What one open of the composition counted, taken out of each Alma phase per process. */
  readonly openCost?: Counted;
}

const noMeter: Meter = {
  before: async () => {},
  afterTurns: async () => {},
  afterClose: async () => {},
};
const config = scriptedConfig("park");
const sum = (results: readonly WorkerResult[], pick: (r: WorkerResult) => number | undefined) =>
  results.reduce((n, r) => n + (pick(r) ?? 0), 0);

/** Runs each shape's Alma phase and then its floor (`floor` undefined: no floor), catching failures per shape. */
async function shapes(
  store: StoreKind,
  settings: Settings,
  alma: (shape: Shape) => Promise<Phase>,
  floor?: (shape: Shape, commitsPerTurn: number) => Promise<Phase>,
): Promise<StoreRun> {
  const run: StoreRun = { store, phases: [], failures: [] };
  for (const shape of settings.shapes) {
    const at = `${store} ${shape.processes} × ${shape.streams}`;
    try {
      const phase = await alma(shape);
      run.phases.push(phase);
      const perTurn = (phase.counted.commits ?? phase.counted.flushes ?? 0) / settings.turns;
      if (!floor) continue;
      phase.floor = await floor(shape, perTurn);
      run.phases.push(phase.floor);
    } catch (error) {
      run.failures.push(`${at}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return run;
}

/** One process opening the composition and running no turn: what an open alone counts. */
const PROBE = {
  shape: { processes: 1, streams: 1 },
  settings: (settings: Settings): Settings => ({ ...settings, turns: 0, warmup: 0 }),
};

function spec(
  store: StoreKind,
  kind: "alma" | "floor",
  shape: Shape,
  settings: Settings,
  tag: string,
) {
  return {
    store,
    kind,
    ...shape,
    turns: settings.turns,
    warmup: settings.warmup,
    tag,
  } satisfies PhaseSpec;
}

export async function memoryRun(settings: Settings): Promise<StoreRun> {
  return shapes("memory", settings, async (shape) => {
    const phase = spec("memory", "alma", shape, settings, `m${shape.processes}x${shape.streams}`);
    const results = await runPhase(phase, noMeter);
    return { ...shape, store: "memory", kind: "alma", results, counted: {} };
  });
}

/** Flushes between `before` and `afterTurns`: the WAL is read while the stores are still open. */
function walMeter(wals: readonly string[]) {
  const at = { before: 0, after: 0 };
  const meter: Meter = {
    before: async () => {
      at.before = flushes(wals);
    },
    afterTurns: async () => {
      at.after = flushes(wals);
    },
    afterClose: async () => {},
  };
  return { meter, flushes: () => at.after - at.before };
}

/** The workers' statement counts (kit/sqlite-counts.ts) beside the flushes counted in the WAL. */
function sqliteCounted(results: readonly WorkerResult[], flushes: number): Counted {
  return {
    flushes,
    statements: sum(results, (r) => r.sqliteStatements?.all),
    writes: sum(results, (r) => r.sqliteStatements?.writes),
    control: sum(results, (r) => r.sqliteStatements?.control),
  };
}

export async function sqliteRun(settings: Settings, dir: string): Promise<StoreRun> {
  const open = async (tag: string) => {
    const path = join(dir, `${tag}.db`);
    await sqlite({ ...config, store: { path } }).close(); // created and migrated
    return path;
  };
  // One open, no turns: what the composition's open writes (taken out per process below).
  const probePath = await open("probe");
  const probeWal = walMeter(storeWals(probePath));
  const probe = spec("sqlite", "alma", PROBE.shape, PROBE.settings(settings), "sprobe");
  await runPhase({ ...probe, path: probePath }, probeWal.meter);
  const openFlushes = probeWal.flushes();
  const run = await shapes(
    "sqlite",
    settings,
    async (shape) => {
      const tag = `s${shape.processes}x${shape.streams}`;
      const path = await open(tag);
      const wal = walMeter(storeWals(path));
      const results = await runPhase(
        { ...spec("sqlite", "alma", shape, settings, tag), path },
        wal.meter,
      );
      const counted = sqliteCounted(results, wal.flushes() - shape.processes * openFlushes);
      return { ...shape, store: "sqlite", kind: "alma", results, counted };
    },
    async (shape, commitsPerTurn) => {
      const tag = `sf${shape.processes}x${shape.streams}`;
      const path = join(dir, `${tag}.db`);
      sqliteFloor(path).close(); // the table, before the workers race to make it
      const wal = walMeter([`${path}-wal`]);
      const phase = { ...spec("sqlite", "floor", shape, settings, tag), path, commitsPerTurn };
      const results = await runPhase(phase, wal.meter);
      const counted = sqliteCounted(results, wal.flushes());
      return { ...shape, store: "sqlite", kind: "floor", results, counted };
    },
  );
  return { ...run, openCost: { flushes: openFlushes } };
}

/** The server's counts between `before` (no backend) and `afterClose` (every backend gone). */
function serverMeter(server: PgServerCounts) {
  const at: { before?: PgSnapshot; after?: PgSnapshot } = {};
  const meter: Meter = {
    before: async () => {
      at.before = await server.read();
    },
    afterTurns: async () => {},
    afterClose: async () => {
      at.after = await server.read();
    },
  };
  return { meter, counts: (): PgCounts => pgCounts(at.before!, at.after!) };
}

/** `counts` as Counted, less `times` × `open` (what one open of the composition counted). */
function pgCounted(counts: PgCounts, open?: Counted, times = 0): Counted {
  const byKind = counts.statements ? { ...counts.statements } : undefined;
  if (byKind && open?.byKind)
    for (const [kind, n] of Object.entries(open.byKind))
      byKind[kind] = (byKind[kind] ?? 0) - times * n;
  const total = (kinds: readonly string[]) =>
    kinds.reduce((n, kind) => n + (byKind?.[kind] ?? 0), 0);
  return {
    commits: counts.commits - times * (open?.commits ?? 0),
    rollbacks: counts.rollbacks - times * (open?.rollbacks ?? 0),
    ...(counts.evicted ? { evicted: counts.evicted } : {}),
    ...(byKind
      ? { byKind, statements: total(Object.keys(byKind)), control: total(TRANSACTION_CONTROL) }
      : {}),
  };
}

/** A fresh, migrated schema pair for one phase (recorded in `schemas` for the drop at the end). */
async function pgSchema(url: string, tag: string, schemas: string[]): Promise<string> {
  const schema = `bench_durable_${process.pid}_${tag}`;
  schemas.push(schema, `${schema}_root`);
  const store = { connectionString: url, schema, rootSchema: `${schema}_root`, migrate: true };
  await (await postgres({ ...config, store })).close();
  return schema;
}

async function pgAlmaPhase(
  shape: Shape,
  settings: Settings,
  at: { readonly url: string; readonly server: PgServerCounts; readonly schemas: string[] },
  openCost?: Counted,
): Promise<Phase> {
  const tag = `p${shape.processes}x${shape.streams}${openCost ? "" : "probe"}`;
  const schema = await pgSchema(at.url, tag, at.schemas);
  const meter = serverMeter(at.server);
  const phase = { ...spec("postgres", "alma", shape, settings, tag), url: at.url, schema };
  const results = await runPhase(phase, meter.meter);
  const counted = {
    ...pgCounted(meter.counts(), openCost, shape.processes),
    roundTrips: sum(results, (r) => r.roundTrips),
  };
  return { ...shape, store: "postgres", kind: "alma", results, counted };
}

async function pgFloorPhase(
  shape: Shape,
  settings: Settings,
  at: { readonly url: string; readonly server: PgServerCounts; readonly schemas: string[] },
  commitsPerTurn: number,
): Promise<Phase> {
  const tag = `pf${shape.processes}x${shape.streams}`;
  const schema = `bench_durable_${process.pid}_${tag}`;
  at.schemas.push(schema);
  const pool = new pg.Pool({ connectionString: at.url, max: 1 });
  await pool.query(`create schema if not exists ${schema}`);
  await pgFloorTable(pool, `${schema}.floor`);
  await pool.end();
  const meter = serverMeter(at.server);
  const phase = { ...spec("postgres", "floor", shape, settings, tag), url: at.url, schema };
  const results = await runPhase({ ...phase, commitsPerTurn }, meter.meter);
  const counted = pgCounted(meter.counts());
  return { ...shape, store: "postgres", kind: "floor", results, counted };
}

/** `schemas` collects every schema made, for the caller to drop. */
export async function postgresRun(
  settings: Settings,
  url: string,
  server: PgServerCounts,
  schemas: string[],
): Promise<StoreRun> {
  const at = { url, server, schemas };
  const probe = await pgAlmaPhase(PROBE.shape, PROBE.settings(settings), at);
  const openCost = probe.counted;
  const run = await shapes(
    "postgres",
    settings,
    (shape) => pgAlmaPhase(shape, settings, at, openCost),
    (shape, commitsPerTurn) => pgFloorPhase(shape, settings, at, commitsPerTurn),
  );
  return { ...run, openCost };
}
