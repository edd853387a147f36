import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateStore } from "../src/runtime.js";
import { call, pendingAsk, startHost, type TestHost, turn } from "./helpers.js";

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

  it("runs turns, asks and replays with ALMA_DATABASE_URL", async () => {
    expect(t.host.context.store).toMatchObject({ kind: "postgres", durable: true });
    const token = await t.token();
    const pending = turn(t, token, "pg-s1", "k1", "Please book an appointment");
    const ask = await pendingAsk(t);
    t.host.context.asks.answer(ask.id, true);
    const done = await pending;
    expect(done.body).toMatchObject({ status: "completed", terminalReason: "terminal_tool" });
    const calls = t.calls();
    expect((await turn(t, token, "pg-s1", "k1", "Please book an appointment")).body).toMatchObject({
      replayed: true,
    });
    expect(t.calls()).toBe(calls);
    const trails = await call(t.url, `/v1/admin/turns/${done.body.rootKey}`, { token: t.admin });
    expect(trails.body.events).toContainEqual(
      expect.objectContaining({ action: "permission.resolved", by: "operator" }),
    );
  });
});
