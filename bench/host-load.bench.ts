// npm run bench:load — the host holding its load (issue 26 §5). The host runs in a child process
// (`alma serve`'s composition: SQLite in a temporary directory, the offline demo model, which is
// instant and scripted: W2, a tool call then the answer), with the limits of its environment
// (ALMA_MAX_CONNECTIONS, ALMA_TURNS_PER_TENANT, …). After five warm-up turns, this process sends
// BENCH_TURNS (1,000) concurrent SSE turns of one tenant, each on its own connection, while a third
// process probes `/healthz` one request after another, 5 ms apart: on a fresh connection each time
// (as a load balancer's check does), on one kept-alive connection, and on the host's health
// listener (`listenHealth`, ALMA_HEALTH_PORT) on a fresh connection each time. It prints the
// outcomes (200 streams that ended with their result, 429/503 with Retry-After, socket errors), the
// probes' p50/p99/max,
// and the host's own event-loop delay meanwhile. BENCH_DIR puts the store's directory elsewhere
// (`/dev/shm` takes the disk's flushes out of the figures); BENCH_SLOW=N first opens N slow clients
// (a request line, then a header byte a second) that stay open beside the turns.
import { fork } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { Agent } from "node:http";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createHost, demoSetup, mintToken, readEnv } from "@alma-harness/server";
import {
  getOverHttp,
  type LoadOutcome,
  loadAgent,
  sseTurnOverHttp,
} from "../apps/server/test/load-client.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 1000);
const DIR = process.env.BENCH_DIR || tmpdir();
const INPUT = "When are you open on Monday?";
const SLOW = Number(process.env.BENCH_SLOW ?? 0);

type FromChild =
  | {
      readonly type: "ready";
      readonly url: string;
      readonly healthUrl: string;
      readonly token: string;
    }
  | { readonly type: "stopped"; readonly loopMs: { p50: number; p99: number; max: number } }
  | { readonly type: "probing" }
  | {
      readonly type: "probed";
      readonly fresh: Probed;
      readonly kept: Probed;
      readonly healthPort: Probed;
    };

/** The child: a host on SQLite with the demo model; says where it is, reports and stops on a message. */
async function serve(): Promise<void> {
  const home = mkdtempSync(join(DIR, "alma-load-bench-"));
  const env = readEnv({ ...process.env, ALMA_HOME: home });
  const jwtSecret = new TextEncoder().encode("bench-secret-bench-secret-bench-secret-0");
  const host = await createHost({
    models: demoSetup(),
    secrets: {
      jwtSecret,
      adminToken: "adm_bench_operator_token_0123456789",
      trailKey: "bench-trail-key-at-least-32-bytes-long",
      source: { jwt: "bench", admin: "bench", trail: "bench" },
    },
    store: { home, databaseUrl: undefined },
    // Every admitted turn runs in full: the clinic's daily cap would stop them after about 800.
    caps: { perTurnUsd: 0.25, perClinicDayUsd: 100_000 },
    limits: env.limits,
    turnsPerTenant: env.turnsPerTenant,
  });
  const { url } = await host.listen(0, "127.0.0.1");
  const health = await host.listenHealth(0, "127.0.0.1");
  const { token } = await mintToken(jwtSecret, { org: "sunrise-clinic", uid: "p-1001" });
  const loop = monitorEventLoopDelay({ resolution: 5 });
  process.on("message", async (message) => {
    if (message === "measure") loop.enable();
    if (message !== "stop") return;
    loop.disable();
    const ms = (ns: number) => ns / 1e6;
    const loopMs = {
      p50: ms(loop.percentile(50)),
      p99: ms(loop.percentile(99)),
      max: ms(loop.max),
    };
    await host.close(5_000);
    rmSync(home, { recursive: true, force: true });
    process.send?.({ type: "stopped", loopMs } satisfies FromChild, () => process.exit(0));
  });
  process.send?.({ type: "ready", url, healthUrl: health.url, token } satisfies FromChild);
}

/** The prober, a process of its own so the flood's client never delays a probe: until told to stop. */
async function probeUntilStopped(url: string, healthUrl: string): Promise<void> {
  const fresh = loadAgent();
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  const stop = { done: false };
  const probes = Promise.all([
    probe(url, fresh, stop),
    probe(url, kept, stop),
    probe(healthUrl, loadAgent(), stop),
  ]);
  process.once("message", async () => {
    stop.done = true;
    const [freshProbe, keptProbe, healthProbe] = await probes;
    const message: FromChild = {
      type: "probed",
      fresh: freshProbe,
      kept: keptProbe,
      healthPort: healthProbe,
    };
    process.send?.(message, () => process.exit(0));
  });
  process.send?.({ type: "probing" } satisfies FromChild);
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

interface Probed {
  readonly ms: number[];
  readonly failures: string[];
}

/** Probes `/healthz` one request after another, 5 ms apart, until `stop.done`. */
async function probe(url: string, agent: Agent, stop: { done: boolean }): Promise<Probed> {
  const ms: number[] = [];
  const failures: string[] = [];
  while (!stop.done) {
    const started = performance.now();
    const status = await getOverHttp(`${url}/healthz`, agent);
    ms.push(performance.now() - started);
    if (status !== 200) failures.push(String(status));
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return { ms: ms.sort((a, b) => a - b), failures };
}

/** A stop flag that turns itself on after `ms`. */
function stopAfter(ms: number): { done: boolean } {
  const flag = { done: false };
  setTimeout(() => {
    flag.done = true;
  }, ms);
  return flag;
}

function tally(outcomes: readonly LoadOutcome[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of outcomes) {
    let key = o.kind === "error" ? `error ${o.code}` : String(o.status);
    if (o.kind === "stream" && o.events.at(-1)?.event !== "result") key = "200 without a result";
    if (o.kind === "refused" && o.retryAfter === undefined) key = `${o.status} without Retry-After`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

function line(name: string, r: Probed): string {
  const f = (n: number) => `${n.toFixed(1).padStart(7)} ms`;
  const at = (p: number) => f(percentile(r.ms, p));
  return `${name.padEnd(30)} n=${String(r.ms.length).padStart(4)}  p50 ${at(50)}  p99 ${at(99)}  max ${f(r.ms.at(-1) ?? Number.NaN)}  not 200: ${r.failures.length}`;
}

function flood(ready: { url: string; token: string }, agent: Agent): Promise<LoadOutcome[]> {
  return Promise.all(
    Array.from({ length: TURNS }, (_, i) =>
      sseTurnOverHttp(ready.url, agent, {
        token: ready.token,
        session: `bench-${i}`,
        key: `k-${i}`,
        input: INPUT,
      }),
    ),
  );
}

/** `n` slowloris clients: a request line, then one header byte a second; how many the host cut off. */
function slowClients(url: string, n: number): { sockets: Socket[]; cut: () => number } {
  const { port } = new URL(url);
  let cut = 0;
  const sockets = Array.from({ length: n }, () => {
    const socket = connect(Number(port), "127.0.0.1");
    socket.on("error", () => undefined);
    socket.on("close", () => {
      cut += 1;
    });
    socket.write("POST /v1/sessions/slow/turns HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ");
    const drip = setInterval(() => socket.writable && socket.write("a"), 1000);
    socket.on("close", () => clearInterval(drip));
    return socket;
  });
  return { sockets, cut: () => cut };
}

/** A child process of this script in `role`, and its next message. */
function child(...args: string[]) {
  const proc = fork(fileURLToPath(import.meta.url), args, { execArgv: process.execArgv });
  const next = () => new Promise<FromChild>((resolve) => proc.once("message", resolve as never));
  return { proc, next };
}

async function main(): Promise<void> {
  const host = child("--serve");
  const ready = await host.next();
  if (ready.type !== "ready") throw new Error("the host did not start");
  const agent = loadAgent();
  // Warm up: the first turns compile what they load; the figures are the host's once it has.
  for (let i = 0; i < 5; i++)
    await sseTurnOverHttp(ready.url, agent, {
      ...ready,
      session: `w-${i}`,
      key: `w-${i}`,
      input: INPUT,
    });
  const idle = await probe(ready.url, agent, stopAfter(500));
  const slow = slowClients(ready.url, SLOW);
  const prober = child("--probe", ready.url, ready.healthUrl);
  await prober.next();
  host.proc.send("measure");
  const started = performance.now();
  const outcomes = await flood(ready, agent);
  const wallMs = performance.now() - started;
  prober.proc.send("stop");
  const probed = await prober.next();
  const slowCut = slow.cut();
  for (const socket of slow.sockets) socket.destroy();
  agent.destroy();
  host.proc.send("stop");
  const stopped = await host.next();
  const env = readEnv(process.env);
  console.log(
    `host load: ${TURNS} concurrent SSE turns of one tenant (demo model, W2), SQLite in ${DIR}`,
  );
  console.log(
    `limits: ${env.limits.maxConnections} connections, ${env.turnsPerTenant} turns per tenant`,
  );
  console.log(`outcomes in ${(wallMs / 1000).toFixed(1)} s:`, tally(outcomes));
  if (SLOW > 0)
    console.log(`slow clients: ${SLOW} opened, ${slowCut} cut off by the host meanwhile`);
  console.log(line("healthz before, fresh conn", idle));
  if (probed.type === "probed") {
    console.log(line("healthz during, fresh conn", probed.fresh));
    console.log(line("healthz during, kept-alive", probed.kept));
    console.log(line("healthz during, health port", probed.healthPort));
  }
  if (stopped.type === "stopped") {
    const l = stopped.loopMs;
    console.log(
      `host event-loop delay during: p50 ${l.p50.toFixed(1)} ms  p99 ${l.p99.toFixed(1)} ms  max ${l.max.toFixed(1)} ms`,
    );
  }
}

const probeAt = process.argv.indexOf("--probe");
if (process.argv.includes("--serve")) await serve();
else if (probeAt > 0)
  await probeUntilStopped(process.argv[probeAt + 1] ?? "", process.argv[probeAt + 2] ?? "");
else await main();
