import { describe, expect, it } from "vitest";
import { TRIAGE_SCHEMA } from "../src/agent/triage.js";
import { call, HARBOR, hostPerTest, turn } from "./helpers.js";

const startHost = hostPerTest();

const body = (over: Record<string, unknown> = {}) => ({
  prompt: "I need to book an appointment for Friday.",
  output: { name: "triage", schema: TRIAGE_SCHEMA },
  ...over,
});
const post = (url: string, token: string, key: string | undefined, payload: unknown) =>
  call(url, "/v1/calls", {
    token,
    body: payload,
    headers: key === undefined ? {} : { "idempotency-key": key },
  });

describe("POST /v1/calls", () => {
  it("answers the validated object with its cost; a retry under the key replays it without a dispatch", async () => {
    const t = await startHost();
    const token = await t.token();
    const first = await post(t.url, token, "c-1", body());
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      status: "completed",
      replayed: false,
      object: { category: "booking", urgency: 2 },
      costUsd: expect.any(String),
    });
    expect(first.body.operationId).toMatch(/^sc1_/);
    expect(t.calls()).toBe(1);
    const again = await post(t.url, token, "c-1", body());
    expect(again.body).toEqual({ ...first.body, replayed: true });
    expect(t.calls()).toBe(1);
    const read = await call(t.url, "/v1/calls/c-1", { token });
    expect(read.body).toEqual({ ...first.body, replayed: true });
    // Another tenant's key reads as absent.
    expect(
      (await call(t.url, "/v1/calls/c-1", { token: await t.token(HARBOR, "p-2001") })).status,
    ).toBe(404);
  });

  it("refuses a missing key (400), the same key with another body (409) and bad controls (422), dispatching nothing", async () => {
    const t = await startHost();
    const token = await t.token();
    expect((await post(t.url, token, undefined, body())).body).toMatchObject({
      error: { code: "missing_idempotency_key" },
    });
    await post(t.url, token, "c-1", body());
    const conflict = await post(t.url, token, "c-1", body({ prompt: "What are your hours?" }));
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ error: { code: "step_call_conflict" } });
    const tool = await post(
      t.url,
      token,
      "c-2",
      body({ toolChoice: { type: "tool", name: "capture" } }),
    );
    expect(tool.status).toBe(422);
    expect(tool.body).toMatchObject({ error: { code: "invalid_input" } });
    const hot = await post(t.url, token, "c-3", body({ temperature: 2.01 }));
    expect(hot.status).toBe(422);
    expect((await post(t.url, token, "c-4", body({ temperature: 2 }))).body).toMatchObject({
      status: "completed",
    });
    // The intent is the host's: a client that names one is refused.
    expect(
      (await post(t.url, token, "c-5", body({ intent: { tier: "deep", sensitivity: "public" } })))
        .status,
    ).toBe(422);
    expect(t.calls()).toBe(2);
  });
});

describe("the triage classifier on incoming messages", () => {
  it("classifies each delivery once by a single call before its turn; a redelivery replays both", async () => {
    const t = await startHost({ triage: true });
    const token = await t.token();
    const first = await turn(
      t,
      token,
      "s1",
      "m-1",
      "My tooth pain is urgent, can someone call me?",
    );
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      status: "completed",
      triage: { category: "clinical", urgency: 5 },
    });
    const calls = t.calls();
    const again = await turn(
      t,
      token,
      "s1",
      "m-1",
      "My tooth pain is urgent, can someone call me?",
    );
    expect(again.body).toMatchObject({
      replayed: true,
      triage: { category: "clinical", urgency: 5 },
    });
    expect(t.calls()).toBe(calls);
    // The triage call appended nothing: the session holds the turn's messages only.
    const session = await call(t.url, "/v1/sessions/s1", { token });
    expect(JSON.stringify(session.body)).not.toContain("urgency");
  });
});
