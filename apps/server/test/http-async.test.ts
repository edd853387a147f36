import { describe, expect, it } from "vitest";
import { call, gatedSetup, hostPerTest, pendingAsk, turn, until } from "./helpers.js";

const startHost = hostPerTest();

describe("async turns the HTTP way (RFC 7231 202, RFC 7240 Prefer)", () => {
  it("a parked turn's 202 says where the turn is (Location) and when to ask (Retry-After)", async () => {
    const t = await startHost();
    const token = await t.token();
    const started = await turn(t, token, "s1", "book-1", "Please book an appointment");
    expect(started.status).toBe(202);
    expect(started.body.status).toBe("awaiting_approval");
    const location = started.headers.get("location");
    expect(location).toBe(`/v1/turns/${started.body.rootKey}`);
    expect(started.headers.get("retry-after")).toBe("10");
    // No preference was sent, so none is reported.
    expect(started.headers.get("preference-applied")).toBeNull();

    const read = await call(t.url, location as string, { token });
    expect([read.status, read.body.status]).toEqual([202, "awaiting_approval"]);
    expect(read.headers.get("location")).toBe(location);

    const ask = await pendingAsk(t);
    await call(t.url, `/v1/admin/asks/${ask.id}/approve`, { method: "POST", token: t.admin });
    const done = await call(t.url, location as string, {
      token,
      headers: { prefer: "wait=20" },
    });
    expect([done.status, done.body.status]).toEqual([200, "completed"]);
    expect(done.headers.get("preference-applied")).toBe("wait=20");
    expect(done.headers.get("location")).toBeNull();
    expect(done.headers.get("retry-after")).toBeNull();
  });

  it("Prefer: wait=N bounds how long a turn request waits, then 202 in_progress with its Location", async () => {
    const models = gatedSetup();
    const t = await startHost({ models });
    const token = await t.token();
    const waited = await turn(t, token, "s1", "k1", "hello", { prefer: "wait=1" });
    expect(waited.status).toBe(202);
    expect(waited.body).toMatchObject({ status: "in_progress" });
    expect(waited.headers.get("preference-applied")).toBe("wait=1");
    expect(waited.headers.get("retry-after")).toBe("2");
    const location = waited.headers.get("location") as string;
    expect(location).toBe(`/v1/turns/${waited.body.rootKey}`);

    const async = await turn(t, token, "s2", "k2", "hello", { prefer: "respond-async" });
    expect(async.status).toBe(202);
    expect(async.headers.get("preference-applied")).toBe("respond-async");
    expect(async.headers.get("location")).toBe(`/v1/turns/${async.body.rootKey}`);

    await until(() => models.gate.waiting === 2);
    models.gate.open();
    // The follow-up: GET the Location, waiting for the answer (a wait over the maximum is clamped).
    const done = await call(t.url, location, { token, headers: { prefer: "wait=999" } });
    expect([done.status, done.body.status]).toEqual([200, "completed"]);
    expect(done.headers.get("preference-applied")).toBe("wait=60");
    expect(models.gate.calls).toBe(2);
  });

  it("clamps a wait to the host's maximum and says which wait it applied", async () => {
    const t = await startHost({ http: { maxWaitMs: 5_000 } });
    const token = await t.token();
    const res = await turn(t, token, "s1", "k1", "When are you open on Monday?", {
      prefer: "wait=600",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("preference-applied")).toBe("wait=5");
    const plain = await turn(t, token, "s1", "k2", "When are you open on Tuesday?");
    expect(plain.status).toBe(200);
    expect(plain.headers.get("preference-applied")).toBeNull();
  });

  it("a call another request holds answers 202 with the call's Location and Retry-After", async () => {
    const models = gatedSetup();
    const t = await startHost({ models });
    const token = await t.token();
    const payload = {
      prompt: "Classify: hello",
      output: { name: "x", schema: { type: "object" } },
    };
    const post = () =>
      call(t.url, "/v1/calls", { token, body: payload, headers: { "idempotency-key": "c-1" } });
    const first = post();
    await until(() => models.gate.waiting === 1);
    const held = await post();
    expect([held.status, held.body.status]).toEqual([202, "in_progress"]);
    expect(held.headers.get("location")).toBe("/v1/calls/c-1");
    expect(held.headers.get("retry-after")).toBe("2");
    models.gate.open();
    expect((await first).status).toBe(200);
    const read = await call(t.url, held.headers.get("location") as string, { token });
    expect(read.status).toBe(200);
    expect(models.gate.calls).toBe(1);
  });
});
