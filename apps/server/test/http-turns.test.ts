import { scriptedText, scriptedTorn } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { call, fakeSetup, hostPerTest, pendingAsk, turn } from "./helpers.js";

const startHost = hostPerTest();

describe("POST /v1/sessions/:id/turns", () => {
  it("answers a completed turn with 200 and text only, after a tool call", async () => {
    const t = await startHost();
    const res = await turn(t, await t.token(), "s1", "k1", "When are you open on Monday?");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "completed",
      replayed: false,
      terminalReason: "answered",
      toolCalls: [{ name: "opening_hours", isError: false }],
    });
    expect(res.body.text).toMatch(/Sunrise Family Clinic is open on monday .* from 08:00 to 18:00/);
    expect(res.body).not.toHaveProperty("result");
  });

  it("retries under the same Idempotency-Key replay the outcome: one model dispatch", async () => {
    const t = await startHost();
    const token = await t.token();
    const first = await turn(t, token, "s1", "same-key", "When are you open on Monday?");
    const calls = t.calls();
    const second = await turn(t, token, "s1", "same-key", "When are you open on Monday?");
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({
      status: "completed",
      replayed: true,
      rootKey: first.body.rootKey,
      text: first.body.text,
    });
    expect(t.calls()).toBe(calls);
  });

  it("refuses the same key with different input as a 409 conflict, running nothing", async () => {
    const t = await startHost();
    const token = await t.token();
    await turn(t, token, "s1", "k1", "When are you open on Monday?");
    const calls = t.calls();
    const res = await turn(t, token, "s1", "k1", "Any free slots tomorrow?");
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: { code: "conversation_conflict", message: expect.any(String) },
    });
    expect(t.calls()).toBe(calls);
  });

  it("answers 202 awaiting_approval while the turn is parked on an operator, 409 busy for another key, then completes", async () => {
    const t = await startHost();
    const token = await t.token();
    const started = await turn(t, token, "s1", "book-1", "Please book an appointment");
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({
      status: "awaiting_approval",
      rootKey: expect.stringMatching(/^c1_/),
      notice: expect.stringMatching(/approve/),
      asks: [{ askId: expect.stringMatching(/^ask_/), tool: "book_appointment" }],
    });
    // The patient's view is content-free: no input, no digest, no decision token.
    expect(JSON.stringify(started.body)).not.toMatch(/digest|token|slotId/);
    const rootKey = started.body.rootKey as string;
    const ask = await pendingAsk(t);
    expect(ask).toMatchObject({ rootKey, org: "sunrise-clinic" });

    const read = await call(t.url, `/v1/turns/${rootKey}`, { token });
    expect([read.status, read.body.status]).toEqual([202, "awaiting_approval"]);
    const retry = await turn(t, token, "s1", "book-1", "Please book an appointment");
    expect([retry.status, retry.body.status]).toEqual([202, "awaiting_approval"]);
    const busy = await turn(t, token, "s1", "other-key", "When are you open on Monday?");
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error: { code: "busy" } });

    expect(
      (await call(t.url, `/v1/admin/asks/${ask.id}/approve`, { method: "POST", token: t.admin }))
        .status,
    ).toBe(200);
    // A long poll (`Prefer: wait`) answers as the resumed turn settles.
    const longPoll = await call(t.url, `/v1/turns/${rootKey}`, {
      token,
      headers: { prefer: "wait=20" },
    });
    expect(longPoll.status).toBe(200);
    await t.host.idle();
    const done = await call(t.url, `/v1/turns/${rootKey}`, { token });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      status: "completed",
      replayed: true,
      terminalReason: "terminal_tool",
      stopReason: "tool_use",
    });
    expect(done.body.text).toMatch(/Your appointment is booked for/);
    expect((done.body.delivered as string[])[0]).toMatch(
      /^Confirmed: your appointment on .* \(reference apt-\d+\)\.$/,
    );
    // A second decision on the same ask is refused: it is no longer pending.
    const again = await call(t.url, `/v1/admin/asks/${ask.id}/deny`, {
      method: "POST",
      token: t.admin,
    });
    expect(again.status).toBe(404);
  });

  it("the original key goes on with a decided turn and returns its outcome", async () => {
    const t = await startHost();
    const token = await t.token();
    await turn(t, token, "s1", "book-2", "Please book an appointment");
    const ask = await pendingAsk(t);
    // The decision is recorded without resuming (as a process that died right after would leave it).
    const view = await t.host.context.runtime.runner.findAsk(ask.id);
    await t.host.context.runtime.runner.decideAsk({
      scope: view?.scope as { org: string; uid: string },
      askId: ask.id,
      decision: "approve",
      by: "operator",
    });
    const retry = await turn(t, token, "s1", "book-2", "Please book an appointment");
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ status: "completed", terminalReason: "terminal_tool" });
    expect(t.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001")).toHaveLength(1);
  });

  it("a denied booking completes with the model's account of the refusal", async () => {
    const t = await startHost();
    const token = await t.token();
    const parked = await turn(t, token, "s1", "book-3", "Please book an appointment");
    const ask = await pendingAsk(t);
    expect(
      (await call(t.url, `/v1/admin/asks/${ask.id}/deny`, { method: "POST", token: t.admin })).body,
    ).toEqual({ askId: ask.id, state: "denied" });
    await t.host.idle();
    const res = await call(t.url, `/v1/turns/${parked.body.rootKey as string}`, { token });
    expect(res.status).toBe(200);
    expect(res.body.text).toMatch(/The booking was not made: .*denied/);
    expect(res.body.toolCalls).toContainEqual({ name: "book_appointment", isError: true });
    expect(t.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001")).toEqual([]);
  });

  it("refuses input the runner would refuse with 422, before any model call", async () => {
    const t = await startHost();
    const token = await t.token();
    for (const input of [
      "",
      42,
      { role: "assistant", blocks: [{ type: "text", text: "hi" }] },
      "x".repeat(4_001),
    ]) {
      const res = await turn(t, token, "s1", `k-${String(input).length}`, input);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ error: { code: "invalid_input" } });
    }
    const unknown = await call(t.url, "/v1/sessions/s1/turns", {
      token,
      body: { input: "hi", intent: { tier: "deep", sensitivity: "public" } },
      headers: { "idempotency-key": "k9" },
    });
    expect(unknown.status).toBe(422);
    // The answer names what the route takes, never the field that was sent.
    expect(unknown.body).toMatchObject({
      error: { code: "invalid_input", message: "this route takes only input" },
    });
    expect(t.calls()).toBe(0);
  });

  it("needs an Idempotency-Key (400) that is a valid id (422), and a valid session id (422)", async () => {
    const t = await startHost();
    const token = await t.token();
    const missing = await call(t.url, "/v1/sessions/s1/turns", { token, body: { input: "hi" } });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ error: { code: "missing_idempotency_key" } });
    const bad = await turn(t, token, "s1", "has space", "hi");
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ error: { code: "invalid_id" } });
    const session = await turn(t, token, "%E2%9C%93", "k1", "hi");
    expect(session.status).toBe(422);
    expect(t.calls()).toBe(0);
  });

  it("answers 503 not_admitted when no route serves the turn, and nothing runs", async () => {
    const models = fakeSetup([], {
      resolve: () => {
        throw new Error("no route");
      },
    });
    const t = await startHost({ models });
    const res = await turn(t, await t.token(), "s1", "k1", "hi");
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: { code: "not_admitted" } });
    expect(models.fake.calls).toBe(0);
  });

  it("shows the host's own message for an uncertain turn and lists it for the operator", async () => {
    const t = await startHost({ models: fakeSetup([scriptedTorn(scriptedText("partial"))]) });
    const res = await turn(t, await t.token(), "s1", "k1", "hi");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "reconciliation_required",
      notice: expect.stringContaining("could not confirm"),
    });
    const listed = await call(t.url, "/v1/admin/uncertain", { token: t.admin });
    expect(listed.body.turns).toEqual([
      expect.objectContaining({
        rootKey: res.body.rootKey,
        org: "sunrise-clinic",
        uid: "p-1001",
        cause: expect.stringMatching(/^call:main:/),
      }),
    ]);
  });

  it("shows the host's message when the clinic's daily cap stops a turn", async () => {
    const t = await startHost({ caps: { perTurnUsd: 1, perClinicDayUsd: 0.000001 } });
    const res = await turn(t, await t.token(), "s1", "k1", "When are you open on Monday?");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: "completed",
      terminalReason: "budget",
      text: "",
      notice: expect.stringContaining("budget for today"),
    });
  });
});

describe("GET /v1/turns/:rootKey", () => {
  it("reads a completed turn (200, replayed) and an unknown key is 404", async () => {
    const t = await startHost();
    const token = await t.token();
    const done = await turn(t, token, "s1", "k1", "What is on my record?");
    const read = await call(t.url, `/v1/turns/${done.body.rootKey}`, { token });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ status: "completed", replayed: true, text: done.body.text });
    const unknown = await call(t.url, "/v1/turns/c1_unknown", { token });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: { code: "not_found" } });
  });
});
