import { describe, expect, it } from "vitest";
import { call, hostPerTest, pendingAsk, turn } from "./helpers.js";

const startHost = hostPerTest();

const AT = "2026-11-29T10:00:00Z";

describe("POST /v1/sessions/:id/events", () => {
  it("records product-side events once (200), replays them, and refuses a changed batch (409)", async () => {
    const t = await startHost();
    const token = await t.token();
    const events = [
      {
        id: "msg-1",
        at: AT,
        kind: "message",
        role: "assistant",
        origin: "human",
        blocks: [{ type: "text", text: "Hi, this is Ana from the clinic." }],
      },
    ];
    const first = await call(t.url, "/v1/sessions/s1/events", { token, body: { events } });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: "recorded", appended: 1, replayed: 0 });
    const again = await call(t.url, "/v1/sessions/s1/events", { token, body: { events } });
    expect(again.body).toEqual({ status: "recorded", appended: 0, replayed: 1 });
    const changed = [{ ...events[0], blocks: [{ type: "text", text: "Something else" }] }];
    const conflict = await call(t.url, "/v1/sessions/s1/events", {
      token,
      body: { events: changed },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ error: { code: "event_refused" } });
    const session = await call(t.url, "/v1/sessions/s1", { token });
    expect(session.body.messages).toEqual([
      expect.objectContaining({
        role: "assistant",
        origin: "human",
        text: "Hi, this is Ana from the clinic.",
        event: "message",
      }),
    ]);
  });

  it("refuses malformed events with 422 and unknown fields with 422", async () => {
    const t = await startHost();
    const token = await t.token();
    expect(
      (await call(t.url, "/v1/sessions/s1/events", { token, body: { events: [] } })).status,
    ).toBe(422);
    expect(
      (
        await call(t.url, "/v1/sessions/s1/events", {
          token,
          body: { events: [{ id: "x", at: "yesterday", kind: "message" }] },
        })
      ).status,
    ).toBe(422);
    expect(
      (
        await call(t.url, "/v1/sessions/s1/events", {
          token,
          body: { events: [], scope: { org: "harbor-dental" } },
        })
      ).status,
    ).toBe(422);
  });

  it("answers 409 busy while a turn holds the session", async () => {
    const t = await startHost();
    const token = await t.token();
    const pending = turn(t, token, "s1", "book", "Please book an appointment");
    const ask = await pendingAsk(t);
    const events = [
      {
        id: "msg-2",
        at: AT,
        kind: "message",
        role: "user",
        blocks: [{ type: "text", text: "hello?" }],
      },
    ];
    const busy = await call(t.url, "/v1/sessions/s1/events", { token, body: { events } });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error: { code: "busy" } });
    t.host.context.asks.answer(ask.id, false);
    await pending;
  });
});

describe("sessions: list, read, erase", () => {
  it("lists and reads the caller's own sessions, as text without payloads", async () => {
    const t = await startHost();
    const token = await t.token();
    const done = await turn(t, token, "s1", "k1", "What is on my record?");
    const list = await call(t.url, "/v1/sessions", { token });
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([expect.objectContaining({ sessionId: "s1", revision: 4 })]);
    const read = await call(t.url, "/v1/sessions/s1", { token });
    expect(read.body.turns).toEqual([
      {
        rootKey: done.body.rootKey,
        input: "What is on my record?",
        reply: done.body.text,
        tools: ["read_patient_record"],
      },
    ]);
    expect(JSON.stringify(read.body)).not.toContain("Today is");
  });

  it("erases a session (204): its turns become unavailable (410) and the log is empty", async () => {
    const t = await startHost();
    const token = await t.token();
    const done = await turn(t, token, "s1", "k1", "When are you open on Monday?");
    const erased = await call(t.url, "/v1/sessions/s1", { token, method: "DELETE" });
    expect(erased.status).toBe(204);
    const read = await call(t.url, `/v1/turns/${done.body.rootKey}`, { token });
    expect(read.status).toBe(410);
    expect(read.body).toMatchObject({ error: { code: "unavailable" } });
    const session = await call(t.url, "/v1/sessions/s1", { token });
    expect(session.body).toMatchObject({ erased: true, messages: [] });
  });

  it("refuses to erase a session while its turn runs (409)", async () => {
    const t = await startHost();
    const token = await t.token();
    const pending = turn(t, token, "s1", "book", "Please book an appointment");
    const ask = await pendingAsk(t);
    const res = await call(t.url, "/v1/sessions/s1", { token, method: "DELETE" });
    expect(res.status).toBe(409);
    t.host.context.asks.answer(ask.id, false);
    await pending;
  });

  it("GET /v1/me says who the token is for", async () => {
    const t = await startHost();
    const res = await call(t.url, "/v1/me", { token: await t.token() });
    expect(res.body).toEqual({
      org: "sunrise-clinic",
      uid: "p-1001",
      clinic: "Sunrise Family Clinic",
      patient: "Ana Souza",
    });
  });
});

describe("public routes", () => {
  it("GET /healthz and /v1/info need no token and say when the model is the offline demo", async () => {
    const t = await startHost();
    expect((await call(t.url, "/healthz")).body).toEqual({ ok: true });
    const info = await call(t.url, "/v1/info");
    expect(info.body).toMatchObject({
      offlineDemo: true,
      model: "offline demo model",
      tiers: { fast: "offline-demo" },
      intent: { sensitivity: "confidential" },
    });
    const head = await fetch(`${t.url}/healthz`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("unknown routes are 404 and wrong methods 405 with Allow", async () => {
    const t = await startHost();
    const missing = await call(t.url, "/v1/nope");
    expect(missing).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    const wrong = await call(t.url, "/v1/sessions/s1/turns", { method: "GET" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect(wrong.body).toMatchObject({ error: { code: "method_not_allowed" } });
  });

  it("serves the console page with a strict CSP, and never a file outside its assets", async () => {
    const t = await startHost({ http: { publicDir: "/nonexistent" } });
    const page = await fetch(`${t.url}/`);
    expect(page.status).toBe(503);
    expect(await page.text()).toContain("build:console");
    expect((await call(t.url, "/assets/..%2f..%2fpackage.json")).status).toBe(404);
  });
});

describe("turn inputs that carry a recorded event id", () => {
  it("answers 409 duplicate_event for an input whose event id is already in the log, before any call", async () => {
    const t = await startHost();
    const token = await t.token();
    const events = [
      {
        id: "wa-77",
        at: AT,
        kind: "message",
        role: "user",
        blocks: [{ type: "text", text: "hi" }],
      },
    ];
    expect((await call(t.url, "/v1/sessions/s1/events", { token, body: { events } })).status).toBe(
      200,
    );
    const input = {
      role: "user",
      blocks: [{ type: "text", text: "When are you open on Monday?" }],
      meta: { event: { id: "wa-77", kind: "input" } },
    };
    const res = await turn(t, token, "s1", "k1", input);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ error: { code: "duplicate_event" } });
    expect(t.calls()).toBe(0);
  });

  it("refuses turns and events in an erased session with 410, before any call", async () => {
    const t = await startHost();
    const token = await t.token();
    await turn(t, token, "s1", "k1", "When are you open on Monday?");
    await call(t.url, "/v1/sessions/s1", { token, method: "DELETE" });
    const calls = t.calls();
    const res = await turn(t, token, "s1", "k2", "When are you open on Monday?");
    expect(res.status).toBe(410);
    expect(res.body).toEqual({
      error: { code: "unavailable", message: "this session was erased; start a new session" },
    });
    const events = [
      { id: "e1", at: AT, kind: "message", role: "user", blocks: [{ type: "text", text: "hi" }] },
    ];
    expect((await call(t.url, "/v1/sessions/s1/events", { token, body: { events } })).status).toBe(
      410,
    );
    expect(t.calls()).toBe(calls);
  });
});
