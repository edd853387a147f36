import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateStore } from "../src/runtime.js";
import { call, collect, pendingAsk, sseTurn, startHost, type TestHost, turn } from "./helpers.js";

const URL_ = process.env.ALMA_TEST_DATABASE_URL;
const title = URL_
  ? "the host on PostgreSQL"
  : "the host on PostgreSQL [SKIPPED: ALMA_TEST_DATABASE_URL is not set; .ci/run starts a server]";

if (!URL_) console.warn("PostgreSQL host test skipped: ALMA_TEST_DATABASE_URL is not set");

describe.skipIf(!URL_)(title, () => {
  const suffix = randomBytes(4).toString("hex");
  const store = {
    databaseUrl: URL_ as string,
    pgSchemas: { schema: `srv_${suffix}`, rootSchema: `srv_root_${suffix}` },
  };
  let t: TestHost;

  beforeAll(async () => {
    await expect(startHost({ store: { home: "/nonexistent", ...store } })).rejects.toThrow(
      /run `npx alma migrate`/,
    );
    expect(await migrateStore({ home: "/nonexistent", ...store })).toMatch(
      /^PostgreSQL at .*: schemas srv_\w+ and srv_root_\w+ are up to date$/,
    );
    t = await startHost({ store: { home: "/nonexistent", ...store } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it("runs turns, parks an ask, decides it, and replays with ALMA_DATABASE_URL", async () => {
    expect(t.host.context.store).toMatchObject({ kind: "postgres", durable: true });
    const token = await t.token();
    const parked = await turn(t, token, "pg-s1", "k1", "Please book an appointment");
    expect(parked.body.status).toBe("awaiting_approval");
    const ask = await pendingAsk(t);
    await t.host.context.asks.answer(ask.id, true);
    await t.host.idle();
    const done = await call(t.url, `/v1/turns/${ask.rootKey}`, { token });
    expect(done.body).toMatchObject({ status: "completed", terminalReason: "terminal_tool" });
    const calls = t.calls();
    expect((await turn(t, token, "pg-s1", "k1", "Please book an appointment")).body).toMatchObject({
      replayed: true,
    });
    expect(t.calls()).toBe(calls);
    const trails = await call(t.url, `/v1/admin/turns/${ask.rootKey}`, { token: t.admin });
    expect(trails.body.events).toContainEqual(
      expect.objectContaining({ action: "permission.resolved", by: "operator" }),
    );
  });

  it("a parked ask survives its host: another host on the same database takes the approval", async () => {
    const token = await t.token();
    await turn(t, token, "pg-s2", "k2", "Please book an appointment");
    const ask = await pendingAsk(t);
    const other = await startHost({ store: { home: "/nonexistent", ...store } });
    try {
      expect((await pendingAsk(other)).id).toBe(ask.id);
      const approve = `/v1/admin/asks/${ask.id}/approve`;
      expect((await call(other.url, approve, { method: "POST", token: other.admin })).status).toBe(
        200,
      );
      await other.host.idle();
      const done = await call(t.url, `/v1/turns/${ask.rootKey}`, { token });
      expect(done.body).toMatchObject({ status: "completed", terminalReason: "terminal_tool" });
      // The booking ran once, in the host that resumed the turn.
      expect(other.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001")).toHaveLength(1);
      expect((await call(t.url, approve, { method: "POST", token: t.admin })).status).toBe(404);
    } finally {
      await other.host.close(0);
    }
  });

  it("two hosts resuming the same decided turn produce one resume", async () => {
    const token = await t.token();
    await turn(t, token, "pg-s3", "k3", "Please book an appointment");
    const ask = await pendingAsk(t);
    const other = await startHost({ store: { home: "/nonexistent", ...store } });
    const count = () =>
      [t, other]
        .map((h) => h.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001").length)
        .reduce((a, b) => a + b, 0);
    const before = count();
    try {
      const runner = t.host.context.runtime.runner;
      const found = await runner.findAsk(ask.id);
      const scope = found?.scope as { org: string; uid: string };
      await runner.decideAsk({ scope, askId: ask.id, decision: "approve", by: "operator" });
      const views = await Promise.all([
        runner.resume(scope, ask.rootKey),
        other.host.context.runtime.runner.resume(scope, ask.rootKey),
      ]);
      expect(views.map((v) => v.status)).toContain("completed");
      expect(count() - before).toBe(1);
    } finally {
      await other.host.close(0);
    }
  });

  it("a stream reconnecting with Last-Event-ID after each step yields every later event once", async () => {
    const token = await t.token();
    const live = await collect(
      await sseTurn(t, token, "pg-s4", "k4", "When are you open on Monday?"),
    );
    const texts = (events: readonly { event: string; id?: string }[]) =>
      events.filter((e) => e.event === "text").map((e) => e.id);
    expect(texts(live)).toEqual(["1", "2"]);
    const rootKey = (JSON.parse(live.at(-1)?.data ?? "{}") as { rootKey: string }).rootKey;
    for (const [lastId, expected] of [
      ["1", ["2"]],
      ["2", []],
    ] as const) {
      const res = await fetch(`${t.url}/v1/turns/${rootKey}`, {
        headers: {
          authorization: `Bearer ${token}`,
          accept: "text/event-stream",
          "last-event-id": lastId,
        },
      });
      const events = await collect(res);
      expect(texts(events)).toEqual(expected);
      expect(events.at(-1)).toMatchObject({ event: "result", id: "2.end" });
    }
  });
});
