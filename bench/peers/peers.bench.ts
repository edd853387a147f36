// npm run bench:peers — Alma beside three peer agent runtimes on the same scripted, instant model
// (no network, no timers in any model). See bench/README.md "Peers" for what each workload is.
// Alma comes from source through the workspace packages (node --conditions=alma-source --import
// tsx, run from the repo root); the peers resolve from bench/peers/node_modules, which Node finds
// first because this file lives in bench/peers. Never asserts a timing: it prints a report.
import { spawnSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { BASE, RUNNERS, type Runner, type Workload } from "./runners.js";

// ---------------------------------------------------------------- measurement
const now = () => process.hrtime.bigint();
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const gc = () => {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error("the heap figure needs --expose-gc");
  g();
  g();
};

/**
 * One batch, µs per turn (wall clock). No forced collection before it: tried, a full GC before
 * every batch made Alma's turns 1.5-2× slower and ai's up to 1.8× (likely V8 aging out code under
 * repeated full collections), so the garbage one batch leaves is collected wherever V8 decides,
 * and the rotation spreads that around.
 */
async function timedBatch(r: Runner, w: Workload, n: number): Promise<number> {
  const turn = await r.batch(w, n);
  const start = now();
  for (let i = 0; i < n; i++) await turn(i);
  return Number(now() - start) / 1000 / n;
}

interface W5 {
  readonly ms: number;
  readonly peakMb: number;
  readonly growthMb: number;
}

/** W5 in this (child) process: a sequential warm-up, then 1,000 concurrent W2 turns in separate sessions. */
async function w5(r: Runner, n: number): Promise<W5> {
  await timedBatch(r, "w2", 300);
  const turn = await r.batch("w2", n);
  const before = process.memoryUsage().rss;
  const start = now();
  await Promise.all(Array.from({ length: n }, (_, i) => turn(i)));
  const ms = Number(now() - start) / 1e6;
  const peak = Math.max(process.resourceUsage().maxRSS * 1024, process.memoryUsage().rss);
  return { ms, peakMb: peak / 2 ** 20, growthMb: (peak - before) / 2 ** 20 };
}

/** Heap growth while 1,000 W2 results are kept alive, after a full GC either side. */
async function heap(r: Runner, n: number): Promise<{ mb: number }> {
  await timedBatch(r, "w2", 300);
  const turn = await r.batch("w2", n);
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept: unknown[] = [];
  for (let i = 0; i < n; i++) kept.push(await turn(i));
  gc();
  const after = process.memoryUsage().heapUsed;
  if (kept.length !== n) throw new Error("lost a result");
  return { mb: (after - before) / 2 ** 20 };
}

function child(mode: "w5" | "heap", name: string): Record<string, number> {
  const out = spawnSync(
    process.execPath,
    [
      "--expose-gc",
      "--conditions=alma-source",
      "--import",
      "tsx",
      fileURLToPath(import.meta.url),
      "--child",
      mode,
      name,
    ],
    {
      encoding: "utf8",
      env: process.env,
      maxBuffer: 16 * 2 ** 20,
    },
  );
  const line = out.stdout.trim().split("\n").at(-1) ?? "";
  if (out.status !== 0 || !line.startsWith("{"))
    throw new Error(`child ${mode} ${name} failed (${out.status}):\n${out.stderr}`);
  return JSON.parse(line) as Record<string, number>;
}

const W5_TURNS = 1000;
const HEAP_RESULTS = 1000;
const args = process.argv.slice(2);
if (args[0] === "--child") {
  const r = RUNNERS.find((x) => x.name === args[2]);
  if (!r) throw new Error(`no runner ${args[2]}`);
  const result = args[1] === "w5" ? await w5(r, W5_TURNS) : await heap(r, HEAP_RESULTS);
  console.log(JSON.stringify(result));
} else {
  const N = Math.max(1, Number(process.env.BENCH_TURNS ?? 1000));
  const BATCH = Math.min(50, N);
  const ROUNDS = Math.ceil(N / BATCH);
  const WARMUP_ROUNDS = Math.max(1, Math.ceil(Math.min(N, 300) / BATCH));
  const W5_ROUNDS = Math.max(1, Number(process.env.BENCH_W5_ROUNDS ?? 3));
  const workloads: readonly Workload[] = ["w2", "w3", "w4"];
  const samples = new Map<string, number[]>();
  const loadAtStart = loadavg();
  // A runner that cannot run a workload is reported as such, never measured or faked.
  const failed = new Map<string, string>();
  const began = now();
  // Round-robin: each round runs one batch of every workload on every runner, the workload and
  // runner orders rotated each round so none always goes first or last; warm-up rounds discarded.
  for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
    for (let j = 0; j < workloads.length; j++) {
      const w = workloads[(round + j) % workloads.length]!;
      for (let k = 0; k < RUNNERS.length; k++) {
        const r = RUNNERS[(round + k) % RUNNERS.length]!;
        if (failed.has(r.name)) continue;
        try {
          const us = await timedBatch(r, w, BATCH);
          if (round >= WARMUP_ROUNDS)
            samples.set(`${r.name}/${w}`, [...(samples.get(`${r.name}/${w}`) ?? []), us]);
        } catch (e) {
          failed.set(r.name, `${w}: ${e instanceof Error ? e.message : String(e)}`.split("\n")[0]!);
        }
      }
    }
  }
  const inProcessS = Number(now() - began) / 1e9;
  // W5 and the heap figure in a child process per runner, so each RSS and heap is its own;
  // W5 repeated W5_ROUNDS times, interleaved across runners, the median taken.
  const w5s = new Map<string, W5[]>();
  const heaps = new Map<string, number>();
  const inChild = (r: Runner, mode: "w5" | "heap") => {
    try {
      return child(mode, r.name);
    } catch (e) {
      failed.set(
        r.name,
        `${mode}: ${e instanceof Error ? e.message : String(e)}`.split("\n").slice(0, 2).join(" "),
      );
      return undefined;
    }
  };
  for (let round = 0; round < W5_ROUNDS; round++) {
    for (let k = 0; k < RUNNERS.length; k++) {
      const r = RUNNERS[(round + k) % RUNNERS.length]!;
      if (failed.has(r.name)) continue;
      const got = inChild(r, "w5") as unknown as W5 | undefined;
      if (got) w5s.set(r.name, [...(w5s.get(r.name) ?? []), got]);
    }
  }
  for (const r of RUNNERS) {
    if (failed.has(r.name)) continue;
    const got = inChild(r, "heap");
    if (got) heaps.set(r.name, got.mb!);
  }

  interface Row {
    w2: number;
    w3: number;
    w4: number;
    w5ms: number;
    peakMb: number;
    growthMb: number;
    heapMb: number;
  }
  const rows = new Map<string, Row>();
  for (const r of RUNNERS) {
    if (failed.has(r.name)) continue;
    const m = (w: Workload) => median(samples.get(`${r.name}/${w}`)!);
    const w5r = w5s.get(r.name)!;
    rows.set(r.name, {
      w2: m("w2"),
      w3: m("w3"),
      w4: m("w4"),
      w5ms: median(w5r.map((x) => x.ms)),
      peakMb: median(w5r.map((x) => x.peakMb)),
      growthMb: median(w5r.map((x) => x.growthMb)),
      heapMb: heaps.get(r.name)!,
    });
  }
  const f1 = (x: number) => x.toFixed(1);
  const f2 = (x: number) => x.toFixed(2);
  const q = (a: number, b: number) => `${f2(a / b)}×`;
  const table: string[][] = [
    [
      "runner",
      "W2 µs",
      "W3 µs",
      "W4 µs",
      "W3/W2",
      "W4/W2",
      "W5 ms",
      "W5 peak RSS MB",
      "W5 RSS growth MB",
      "heap MB / 1k results",
    ],
  ];
  for (const [name, x] of rows)
    table.push([
      name,
      f1(x.w2),
      f1(x.w3),
      f1(x.w4),
      f2(x.w3 / x.w2),
      f2(x.w4 / x.w2),
      f1(x.w5ms),
      x.peakMb.toFixed(0),
      x.growthMb.toFixed(0),
      f1(x.heapMb),
    ]);
  for (const name of failed.keys())
    table.push([name, "not run", ...Array.from({ length: 8 }, () => "-")]);
  const base = rows.get(BASE);
  for (const name of ["alma runtime", "alma engine"]) {
    const x = rows.get(name);
    if (!x || !base) continue;
    // A growth of a few MB is within the noise of RSS sampling: no ratio against it.
    const growth = base.growthMb < 5 ? "-" : q(x.growthMb, base.growthMb);
    table.push([
      `${name} ÷ ${BASE}`,
      q(x.w2, base.w2),
      q(x.w3, base.w3),
      q(x.w4, base.w4),
      q(x.w3 / x.w2, base.w3 / base.w2),
      q(x.w4 / x.w2, base.w4 / base.w2),
      q(x.w5ms, base.w5ms),
      q(x.peakMb, base.peakMb),
      growth,
      q(x.heapMb, base.heapMb),
    ]);
  }
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join(" | ")} |`;
  const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
  console.log(
    `peer benchmark: ${N} measured turns per runner and workload (BENCH_TURNS) in batches of ${BATCH}, ${WARMUP_ROUNDS * BATCH} warm-up turns each, runners interleaved`,
  );
  console.log(
    `W2-W4: median over batches of the mean µs per turn; W5: ${W5_TURNS} concurrent W2 turns in a child process per runner, median of ${W5_ROUNDS} (BENCH_W5_ROUNDS); heap: heapUsed growth keeping ${HEAP_RESULTS} W2 results, after gc, in a child process`,
  );
  console.log(
    `node ${process.version}, ${cpus().length} cores, load average ${load(loadAtStart)} at start and ${load(loadavg())} at the end, ${inProcessS.toFixed(1)} s in process`,
  );
  console.log(line(table[0]!));
  console.log(
    `|${widths.map((w, c) => (c === 0 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`,
  );
  for (const row of table.slice(1)) console.log(line(row));
  for (const [name, why] of failed) console.log(`${name} not run: ${why}`);
}
