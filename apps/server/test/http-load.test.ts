import { once } from "node:events";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { OVER_CAPACITY_RETRY_AFTER_S } from "../src/http/connections.js";
import { TURN_LIMIT_RETRY_AFTER_S } from "../src/turn-limit.js";
import { repeatingTextModel } from "@alma-harness/loop/testing";
import { DEFAULT_SERVER_LIMITS } from "../src/http/hardening.js";
import {
  clientSetup,
  type GatedModel,
  gatedSetup,
  hostPerTest,
  SUNRISE,
  type TestHost,
} from "./helpers.js";
import { type LoadOutcome, loadAgent, sseTurnOverHttp } from "./load-client.js";

const TURNS = 1000;

/**
 * The SQLite files on tmpfs where there is one: this test is about the sockets, and 1,000 durable
 * turns wait about 20 s for this machine's disk to flush (the store's cost, measured elsewhere).
 */
const homes: string[] = [];
function scratchHome(): string {
  const home = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "alma-load-"));
  homes.push(home);
  return home;
}
afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});
// Registered after the cleanup above, so each host closes before its files go.
const startHost = hostPerTest();

/**
 * `n` SSE turns from one tenant (one person, a session each), all sent at once, each on its own
 * connection; `seen` hears each outcome as it arrives.
 */
async function flood(
  t: TestHost,
  n: number,
  input: string,
  seen: (o: LoadOutcome) => void = () => undefined,
): Promise<LoadOutcome[]> {
  const token = await t.token();
  const agent = loadAgent();
  try {
    return await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const outcome = await sseTurnOverHttp(t.url, agent, {
          token,
          session: `load-${i}`,
          key: `k-${i}`,
          input,
        });
        seen(outcome);
        return outcome;
      }),
    );
  } finally {
    agent.destroy();
  }
}

/**
 * `flood` with the admitted turns held at the model until every other request has its answer (or
 * an error: a reset must fail the test, not hang it), so the cap and the limits stay full while
 * the rest arrive.
 */
async function floodHeld(t: TestHost, gate: GatedModel): Promise<LoadOutcome[]> {
  let answered = 0;
  const done = flood(t, TURNS, "hello", (o) => {
    if (o.kind !== "stream") answered += 1;
  });
  const poll = setInterval(() => {
    if (answered + gate.waiting === TURNS) gate.open();
  }, 20);
  try {
    return await done;
  } finally {
    clearInterval(poll);
  }
}

/** Outcomes by kind: `200`, `429`, `503`, or `error:<code>`. */
function tally(outcomes: readonly LoadOutcome[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.kind === "error" ? `error:${o.code}` : String(o.status);
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

/** Every request was answered: a stream that ends with its completed result, or a typed refusal. */
function expectAnswered(outcomes: readonly LoadOutcome[]): void {
  expect(outcomes.filter((o) => o.kind === "error")).toEqual([]);
  for (const o of outcomes) {
    if (o.kind === "stream") {
      const last = o.events.at(-1);
      expect(last?.event).toBe("result");
      const result = JSON.parse(last?.data ?? "{}");
      expect(result).toMatchObject({ httpStatus: 200, status: "completed" });
      expect(result.terminalReason).not.toBe("budget");
    } else if (o.kind === "refused") {
      const expected =
        o.status === 429
          ? { code: "too_many_turns", retryAfter: String(TURN_LIMIT_RETRY_AFTER_S) }
          : { code: "over_capacity", retryAfter: String(OVER_CAPACITY_RETRY_AFTER_S) };
      expect([429, 503]).toContain(o.status);
      expect({ code: o.code, retryAfter: o.retryAfter }).toEqual(expected);
    }
  }
}

describe("1,000 concurrent SSE turns from one tenant, on SQLite", () => {
  it("with the default limits: every request answered, no socket error, every admitted turn completed", async () => {
    // The clinic's daily cap would stop most of 1,000 turns early: raised, so each runs in full.
    const t = await startHost({
      models: clientSetup(repeatingTextModel("We are open from 8 to 18.")),
      caps: { perTurnUsd: 0.25, perClinicDayUsd: 1_000 },
      store: { home: scratchHome(), databaseUrl: undefined },
    });
    const outcomes = await flood(t, TURNS, "When are you open on Monday?");
    expectAnswered(outcomes);
    const counts = tally(outcomes);
    expect(counts["200"] ?? 0).toBeGreaterThan(0);
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(TURNS);
    await t.host.idle();
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
    // One model call per admitted turn, none for a refusal.
    expect(t.calls()).toBe(counts["200"]);
  }, 60_000);

  it("with the connection cap at 32: the connections over it get 503 and Retry-After, never a reset", async () => {
    const models = gatedSetup();
    const cap = 32;
    const t = await startHost({ models, limits: { maxConnections: cap } });
    const outcomes = await floodHeld(t, models.gate);
    expectAnswered(outcomes);
    expect(tally(outcomes)).toEqual({ "200": cap, "503": TURNS - cap });
    await t.host.idle();
    expect(models.gate.calls).toBe(cap);
  }, 60_000);

  it("with the default limits and turns that last: 64 run, the rest get 429 or 503, all with Retry-After", async () => {
    const models = gatedSetup();
    const t = await startHost({ models });
    const perTenant = t.host.context.turnLimit.perTenant;
    const outcomes = await floodHeld(t, models.gate);
    expectAnswered(outcomes);
    const counts = tally(outcomes);
    expect(counts["200"]).toBe(perTenant);
    expect((counts["429"] ?? 0) + (counts["503"] ?? 0)).toBe(TURNS - perTenant);
    // The connections under the cap that did not get a turn slot were refused by the tenant limit.
    expect(counts["429"]).toBeGreaterThanOrEqual(DEFAULT_SERVER_LIMITS.maxConnections - perTenant);
    await t.host.idle();
    expect(models.gate.calls).toBe(perTenant);
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
  }, 60_000);

  it("with the cap held by slow clients: every turn is answered 503, and the slow ones are still cut off", async () => {
    const cap = 32;
    const t = await startHost({
      models: gatedSetup(),
      limits: { maxConnections: cap, headersTimeoutMs: 10_000, requestTimeoutMs: 20_000 },
    });
    const slow = await slowClients(t, cap);
    const outcomes = await flood(t, TURNS, "hello");
    expectAnswered(outcomes);
    expect(tally(outcomes)).toEqual({ "503": TURNS });
    // Their headers never finish: the headers timeout closes every one of them.
    t.server.headersTimeout = 200;
    await Promise.all(slow.map((s) => s.closed));
    expect(slow.map((s) => s.received())).toEqual(
      slow.map(() => "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n"),
    );
  }, 60_000);
});

interface SlowClient {
  readonly socket: Socket;
  readonly closed: Promise<unknown>;
  received(): string;
}

/** `n` connections that send a request line and then nothing more: they hold the cap. */
async function slowClients(t: TestHost, n: number): Promise<SlowClient[]> {
  const port = Number(new URL(t.url).port);
  const sockets = Array.from({ length: n }, (): SlowClient => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    socket.on("error", () => undefined);
    socket.write("POST /v1/sessions/slow/turns HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    return { socket, closed: once(socket, "close"), received: () => text };
  });
  await Promise.all(sockets.map((s) => once(s.socket, "connect")));
  const accepted = () =>
    new Promise<number>((resolve) => t.server.getConnections((_e, count) => resolve(count)));
  while ((await accepted()) < n) await new Promise((resolve) => setImmediate(resolve));
  return sockets;
}

const SS = ["/usr/bin/ss", "/bin/ss"].find((path) => existsSync(path));

describe.skipIf(SS === undefined)(
  `the listen backlog${SS === undefined ? " (skipped: no ss, iproute2's socket lister)" : ""}`,
  () => {
    /** The listening socket's backlog, as the kernel reports it (`ss`'s Send-Q of a listener). */
    const backlogOf = (url: string): number => {
      const out = execFileSync(SS as string, ["-Hltn", `sport = :${new URL(url).port}`]);
      return Number(out.toString().trim().split(/\s+/)[2]);
    };
    const somaxconn = Number(readFileSync("/proc/sys/net/core/somaxconn", "utf8"));

    it("is the host's listenBacklog, 4,096 by default (the kernel caps it at somaxconn), not Node's 511: a burst of 1,000 connections is queued by the kernel, not dropped", async () => {
      const models = clientSetup(repeatingTextModel("open"));
      const byDefault = await startHost({ models });
      expect(DEFAULT_SERVER_LIMITS.listenBacklog).toBe(4_096);
      expect(backlogOf(byDefault.url)).toBe(Math.min(4_096, somaxconn));
      const set = await startHost({ models, limits: { listenBacklog: 1_000 } });
      expect(backlogOf(set.url)).toBe(Math.min(1_000, somaxconn));
    });
  },
);
