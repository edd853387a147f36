// One phase of `npm run bench:durable`: worker processes forked together, warmed up, started
// together, measured, and closed, with the counters read at the points the store needs.
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { FromWorker, ToWorker, WorkerResult, WorkerSpec } from "./protocol.js";

const WORKER = fileURLToPath(new URL("./worker.ts", import.meta.url));

/** Every worker still running, so an interrupted run can end them (by their pid). */
export const running = new Set<ChildProcess>();

/**
 * When the counters are read: `before` once every worker is warmed up and has closed its warm-up
 * store (none has opened its measured one); `afterTurns` once every worker has run its turns,
 * stores still open (SQLite's WAL is read here: the last close checkpoints it away);
 * `afterClose` once every worker has closed its store and exited (PostgreSQL's backends have
 * reported).
 */
export interface Meter {
  before(): Promise<void>;
  afterTurns(): Promise<void>;
  afterClose(): Promise<void>;
}

export interface PhaseSpec extends Omit<WorkerSpec, "turns"> {
  readonly processes: number;
  /** Measured turns over all processes, split evenly. */
  readonly turns: number;
}

/** A worker's IPC as a queue of messages, and its exit. */
function start(spec: WorkerSpec) {
  const child = fork(WORKER, [JSON.stringify(spec)], {
    execArgv: ["--conditions=alma-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  running.add(child);
  const inbox: FromWorker[] = [];
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      running.delete(child);
      if (code !== 0) failure ??= new Error(`worker ${child.pid} exited with ${code}`);
      wake?.();
      resolve(code);
    }),
  );
  child.on("message", (message: FromWorker) => {
    if (message.type === "error") failure = new Error(`worker ${child.pid}: ${message.message}`);
    else inbox.push(message);
    wake?.();
  });
  const receive = async <T extends FromWorker["type"]>(type: T) => {
    for (;;) {
      if (failure) throw failure;
      const message = inbox.shift();
      if (message) {
        if (message.type !== type) throw new Error(`worker ${child.pid}: ${message.type}`);
        return message as Extract<FromWorker, { type: T }>;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  };
  const send = (message: ToWorker) => child.send(message);
  return { child, receive, send, exited };
}

/** Runs the phase; its workers' results, in process order. Workers are ended if it fails. */
export async function runPhase(spec: PhaseSpec, meter: Meter): Promise<WorkerResult[]> {
  const { processes, ...worker } = spec;
  const share = (p: number) =>
    Math.floor(spec.turns / processes) + (p < spec.turns % processes ? 1 : 0);
  const workers = Array.from({ length: processes }, (_, p) =>
    start({ ...worker, turns: share(p), tag: `${spec.tag}p${p}` }),
  );
  try {
    await Promise.all(workers.map((w) => w.receive("ready")));
    await meter.before();
    for (const w of workers) w.send({ type: "go" });
    const results = await Promise.all(workers.map(async (w) => (await w.receive("done")).result));
    await meter.afterTurns();
    for (const w of workers) w.send({ type: "close" });
    const codes = await Promise.all(workers.map((w) => w.exited));
    if (codes.some((code) => code !== 0)) throw new Error(`a worker exited with ${codes}`);
    await meter.afterClose();
    return results;
  } finally {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill();
  }
}
