import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { LoopBudget } from "../src/loop-budget.js";
import { nodeListener } from "../src/node-adapter.js";
import { TURN_LIMIT_RETRY_AFTER_S, TurnLimit } from "../src/turn-limit.js";
import {
  call,
  CARLA,
  collect,
  fakeSetup,
  gatedSetup,
  HARBOR,
  hostPerTest,
  pendingAsk,
  sseTurn,
  SUNRISE,
  turn,
  until,
} from "./helpers.js";

const startHost = hostPerTest();
const ASYNC = { prefer: "respond-async" };

function expectTooMany(res: { status: number; headers: Headers; body: Record<string, unknown> }) {
  expect(res.status).toBe(429);
  expect(res.headers.get("retry-after")).toBe(String(TURN_LIMIT_RETRY_AFTER_S));
  expect(res.body).toMatchObject({ error: { code: "too_many_turns" } });
}

describe("the per-tenant turn limit", () => {
  it("runs N turns of a tenant at once; the N+1th is 429 before any model call, another tenant is unaffected", async () => {
    const models = gatedSetup();
    const t = await startHost({ models, turnsPerTenant: 2 });
    const ana = await t.token();
    const streams = [
      await sseTurn(t, ana, "s1", "k1", "hello"),
      await sseTurn(t, ana, "s2", "k2", "hello"),
    ];
    expect(streams.map((r) => r.status)).toEqual([200, 200]);
    await until(() => models.gate.waiting === 2);
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(2);

    // One over: JSON or SSE, another person of the same tenant: 429, typed, and no model call.
    expectTooMany(await turn(t, ana, "s3", "k3", "hello"));
    expectTooMany(await turn(t, await t.token(SUNRISE, "p-1002"), "s1", "k1", "hello"));
    const overSse = await sseTurn(t, ana, "s4", "k4", "hello");
    expect(overSse.status).toBe(429);
    expect(overSse.headers.get("retry-after")).toBe(String(TURN_LIMIT_RETRY_AFTER_S));
    expect(await overSse.json()).toMatchObject({ error: { code: "too_many_turns" } });
    expect(models.gate.calls).toBe(2);

    // Another tenant at the same moment: admitted, its own count.
    const carla = await t.token(HARBOR, CARLA);
    expect((await turn(t, carla, "s1", "k1", "hello", ASYNC)).status).toBe(202);
    await until(() => models.gate.waiting === 3);
    expect(t.host.context.turnLimit.running(HARBOR)).toBe(1);

    // A retry of a running key follows its turn and is never refused.
    expect((await turn(t, ana, "s1", "k1", "hello", ASYNC)).body).toMatchObject({
      status: "in_progress",
    });

    // One turn ends: its slot is free for the next, and only that one.
    models.gate.pass(1);
    await until(() => t.host.context.turnLimit.running(SUNRISE) === 1);
    expect((await turn(t, ana, "s3", "k3", "hello", ASYNC)).status).toBe(202);
    expectTooMany(await turn(t, ana, "s5", "k5", "hello"));
    models.gate.open();
    for (const stream of streams) expect((await collect(stream)).at(-1)?.event).toBe("result");
    await t.host.idle();
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
    expect(t.host.context.turnLimit.running(HARBOR)).toBe(0);
  });

  it("a retry of a stored key replays at the limit instead of being refused", async () => {
    const models = gatedSetup();
    const t = await startHost({ models, turnsPerTenant: 1 });
    const ana = await t.token();
    expect((await turn(t, ana, "s1", "k1", "hello", ASYNC)).status).toBe(202);
    await until(() => models.gate.waiting === 1);
    models.gate.pass(1);
    await t.host.idle();
    // The only slot held by a running turn: a new key is refused, the stored one replays.
    const running = await sseTurn(t, ana, "s2", "k2", "hello");
    await until(() => models.gate.waiting === 1);
    expectTooMany(await turn(t, ana, "s3", "k3", "hello"));
    const replay = await turn(t, ana, "s1", "k1", "hello");
    expect([replay.status, replay.body.status]).toEqual([200, "completed"]);
    expect(models.gate.calls).toBe(2);
    models.gate.open();
    expect((await collect(running)).at(-1)?.event).toBe("result");
  });
});

describe("a turn gives its slot back however it ends", () => {
  it("when it completes, fails, or is refused before it starts", async () => {
    const t = await startHost({
      models: fakeSetup([]),
      turnsPerTenant: 1,
    });
    const ana = await t.token();
    // No script left: the model call fails and the turn ends without an answer.
    const failed = await turn(t, ana, "s1", "k1", "hello");
    expect([failed.status, failed.body.status]).toEqual([200, "reconciliation_required"]);
    await t.host.idle();
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
    // Refused before it starts: invalid input, an erased session.
    expect((await turn(t, ana, "s2", "k2", undefined)).status).toBe(422);
    expect((await call(t.url, "/v1/sessions/s3", { method: "DELETE", token: ana })).status).toBe(
      204,
    );
    expect((await turn(t, ana, "s3", "k3", "hello")).status).toBe(410);
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
  });

  it("when it parks for the operator: the slot is free while it waits", async () => {
    const t = await startHost({ turnsPerTenant: 1 });
    const ana = await t.token();
    const parked = await sseTurn(t, ana, "s1", "book-1", "Please book an appointment");
    const events = await collect(parked);
    expect(JSON.parse(events.at(-1)?.data ?? "{}")).toMatchObject({ status: "awaiting_approval" });
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
    // The slot is free while the turn waits for the operator.
    const next = await turn(t, ana, "s2", "k2", "When are you open on Monday?");
    expect(next.body).toMatchObject({ status: "completed" });
    const ask = await pendingAsk(t);
    const approve = `/v1/admin/asks/${ask.id}/approve`;
    expect((await call(t.url, approve, { method: "POST", token: t.admin })).status).toBe(200);
    await t.host.idle();
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
  });

  it("when the host stops admitting between the triage call and the turn", async () => {
    const models = gatedSetup();
    const t = await startHost({ models, turnsPerTenant: 1, triage: true });
    const ana = await t.token();
    const pending = turn(t, ana, "s1", "k1", "hello");
    await until(() => models.gate.waiting === 1);
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(1);
    t.host.context.shutdown.begin();
    models.gate.open();
    const refused = await pending;
    expect([refused.status, refused.body.error]).toMatchObject([503, { code: "shutting_down" }]);
    expect(models.gate.calls).toBe(1);
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
  });

  it("when its SSE client leaves, only once the turn itself has ended", async () => {
    const models = gatedSetup();
    const t = await startHost({ models, turnsPerTenant: 1 });
    const ana = await t.token();
    const leaving = new AbortController();
    const res = await sseTurn(t, ana, "s1", "k1", "hello", leaving.signal);
    expect(res.status).toBe(200);
    await until(() => models.gate.waiting === 1);
    leaving.abort();
    await res.body?.cancel().catch(() => undefined);
    // The turn is not tied to the socket: it still holds the slot.
    expectTooMany(await turn(t, ana, "s2", "k2", "hello"));
    models.gate.open();
    await t.host.idle();
    expect(t.host.context.turnLimit.running(SUNRISE)).toBe(0);
    expect((await turn(t, ana, "s2", "k2", "hello")).body).toMatchObject({ status: "completed" });
  });
});

describe("TurnLimit", () => {
  it("counts per tenant, releases once per slot, and refuses a limit below one", () => {
    const limit = new TurnLimit(2);
    const a = limit.tryTake(SUNRISE);
    const b = limit.tryTake(SUNRISE);
    expect(limit.tryTake(SUNRISE)).toBeUndefined();
    expect(limit.tryTake(HARBOR)).toBeDefined();
    a?.();
    a?.();
    expect(limit.running(SUNRISE)).toBe(1);
    expect(limit.tryTake(SUNRISE)).toBeDefined();
    b?.();
    expect(limit.running(SUNRISE)).toBe(1);
    expect(() => new TurnLimit(0)).toThrow(RangeError);
  });
});

describe("LoopBudget", () => {
  const busy = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until);
  };
  /** Runs `work` for each name through the budget, noting each iteration of the loop between them. */
  async function trace(budget: LoopBudget, names: string[], work: () => void): Promise<string[]> {
    const order: string[] = [];
    let ticks = 0;
    const tick = () => {
      order.push(`tick${++ticks}`);
      if (ticks < names.length) setImmediate(tick);
    };
    setImmediate(tick);
    await Promise.all(
      names.map((name) =>
        budget.enter().then(() => {
          order.push(name);
          work();
        }),
      ),
    );
    return order;
  }

  it("lets through what fits in one iteration, in arrival order", async () => {
    const order = await trace(new LoopBudget(1_000), ["a", "b", "c"], () => undefined);
    expect(order).toEqual(["tick1", "a", "b", "c"]);
  });

  it("lets one through per iteration when each takes the whole budget", async () => {
    const order = await trace(new LoopBudget(5), ["a", "b", "c"], () => busy(6));
    expect(order).toEqual(["tick1", "a", "tick2", "b", "tick3", "c"]);
  });

  it("the Node adapter sends every request but a health check through it", async () => {
    const t = await startHost();
    let entered = 0;
    // A share of the loop that never comes: whatever waits for it is never answered.
    const stuck = {
      enter: () => {
        entered += 1;
        return new Promise<void>(() => undefined);
      },
    };
    const server = createServer(nodeListener(t.host.handle, undefined, stuck));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    try {
      void fetch(`http://127.0.0.1:${port}/v1/info`).catch(() => undefined);
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect([health.status, await health.json()]).toEqual([200, { ok: true }]);
      await until(() => entered === 1);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
