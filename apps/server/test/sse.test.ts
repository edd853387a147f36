import { describe, expect, it } from "vitest";
import { readSseEvents } from "../src/sse-events.js";
import { sseFrame } from "../src/http/sse.js";
import { scriptedHang } from "@alma-harness/loop/testing";
import { call, collect, fakeSetup, hostPerTest, pendingAsk, sseTurn, turn } from "./helpers.js";

const startHost = hostPerTest();

describe("SSE turns", () => {
  it("streams settled step text, tools and usage with increasing ids, then one result", async () => {
    const t = await startHost();
    const res = await sseTurn(t, await t.token(), "s1", "k1", "What is on my record?");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = await collect(res);
    expect(events.map((e) => e.event)).toEqual([
      "usage",
      "text",
      "tool",
      "usage",
      "text",
      "result",
    ]);
    // Resumable ids: a step's text is its step, the result `<step>.end`; tool and usage events
    // carry none (the parser keeps the last id for them, as an EventSource does).
    expect(events.map((e) => e.id)).toEqual([undefined, "1", "1", "1", "2", "2.end"]);
    expect(JSON.parse(events[1]?.data ?? "")).toEqual({ step: 1, text: "Let me open the record." });
    expect(JSON.parse(events[2]?.data ?? "")).toMatchObject({
      name: "read_patient_record",
      isError: false,
    });
    const result = JSON.parse(events[5]?.data ?? "");
    expect(result).toMatchObject({
      httpStatus: 200,
      status: "completed",
      text: JSON.parse(events[4]?.data ?? "").text,
    });
  });

  it("frames each event as [id,] event and one data line of JSON, after a retry hint", async () => {
    const t = await startHost();
    const res = await sseTurn(
      t,
      await t.token(),
      "s1",
      "k1",
      "When are you open on Monday?\nThanks",
    );
    const raw = await res.text();
    expect(raw.startsWith("retry: 2000\n\n: stream open\n\n")).toBe(true);
    const frames = raw
      .split("\n\n")
      .filter((f) => f && !f.startsWith(":") && !f.startsWith("retry:"));
    expect(frames.length).toBeGreaterThan(3);
    for (const frame of frames) {
      const lines = frame.split("\n");
      const withId = /^event: (text|result)$/.test(lines[1] ?? "");
      expect(lines).toHaveLength(withId ? 3 : 2);
      if (withId) expect(lines[0]).toMatch(/^id: \d+(\.end)?$/);
      const [event, data] = withId ? lines.slice(1) : lines;
      expect(event).toMatch(/^event: (text|tool|usage|result)$/);
      expect(data?.startsWith("data: ")).toBe(true);
      expect(() => JSON.parse(data?.slice(6) ?? "")).not.toThrow();
    }
  });

  it("refuses CR and LF in event names and ids", () => {
    expect(() => sseFrame("text\nevent: result", {}, "1")).toThrow(TypeError);
    expect(() => sseFrame("text", {}, "1\r2")).toThrow(TypeError);
    expect(() => sseFrame("bad name", {}, "1")).toThrow(TypeError);
    expect(sseFrame("text", { text: "a\nb\r\nc" }, "7")).toBe(
      'id: 7\nevent: text\ndata: {"text":"a\\nb\\r\\nc"}\n\n',
    );
  });

  it("a turn parked on the operator ends its stream with the ask, then the view; the decision goes on", async () => {
    const t = await startHost({ http: { pingMs: 5 } });
    const token = await t.token();
    const res = await sseTurn(t, token, "s1", "k1", "Please book an appointment");
    const seen = await collect(res);
    const ask = await pendingAsk(t);
    const permission = seen.find((e) => e.event === "permission");
    expect(JSON.parse(permission?.data ?? "")).toEqual({
      askId: ask.id,
      tool: "book_appointment",
      action: "book",
      state: "pending",
      expiresAt: expect.any(Number),
    });
    expect(seen.at(-1)?.event).toBe("result");
    expect(JSON.parse(seen.at(-1)?.data ?? "")).toMatchObject({
      httpStatus: 202,
      status: "awaiting_approval",
      rootKey: ask.rootKey,
    });
    const approve = `/v1/admin/asks/${ask.id}/approve`;
    expect((await call(t.url, approve, { method: "POST", token: t.admin })).status).toBe(200);
    // The client reads on where the stream ended: a long poll answers as the resumed turn settles.
    const after = await call(t.url, `/v1/turns/${ask.rootKey}`, {
      token,
      headers: { prefer: "wait=20" },
    });
    expect(after.body).toMatchObject({
      status: "completed",
      terminalReason: "terminal_tool",
      delivered: [expect.stringMatching(/^Confirmed/)],
    });
  });

  it("a long poll on a parked turn keeps the connection until the decision, in this process or another", async () => {
    const t = await startHost({ http: { pingMs: 5 } });
    const token = await t.token();
    await collect(await sseTurn(t, token, "s1", "k1", "Please book an appointment"));
    const ask = await pendingAsk(t);
    const poll = call(t.url, `/v1/turns/${ask.rootKey}`, { token, headers: { prefer: "wait=20" } });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await t.host.context.asks.answer(ask.id, true);
    expect((await poll).body).toMatchObject({ status: "completed" });
    expect(t.host.context.desk.appointmentsOf("sunrise-clinic", "p-1001")).toHaveLength(1);
  });

  it("sends keepalive pings while a step runs and nothing else is sent", async () => {
    const t = await startHost({ http: { pingMs: 5 }, models: fakeSetup([scriptedHang()]) });
    const controller = new AbortController();
    const res = await sseTurn(t, await t.token(), "s1", "k1", "hello", controller.signal);
    const comments: string[] = [];
    const events = readSseEvents(res.body as ReadableStream<Uint8Array>, (c) => comments.push(c));
    const next = events.next().catch(() => undefined);
    while (comments.filter((c) => c === "ping").length < 3)
      await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    await next;
    await t.host.close(0);
  });

  it("input errors are JSON 4xx before the stream opens", async () => {
    const t = await startHost();
    const res = await sseTurn(t, await t.token(), "s1", "k1", "");
    expect(res.status).toBe(422);
    expect(res.headers.get("content-type")).toContain("application/json");
  });

  it("a refusal after the stream opened is an error event with the status the JSON API uses", async () => {
    const t = await startHost();
    const token = await t.token();
    await turn(t, token, "s1", "book", "Please book an appointment");
    const ask = await pendingAsk(t);
    const busy = await collect(
      await sseTurn(t, token, "s1", "other", "When are you open on Monday?"),
    );
    expect(busy.at(-1)?.event).toBe("error");
    expect(JSON.parse(busy.at(-1)?.data ?? "")).toEqual({
      status: 409,
      error: { code: "busy", message: expect.any(String) },
    });
    await t.host.context.asks.answer(ask.id, false);
    await t.host.idle();
    const conflict = await collect(await sseTurn(t, token, "s1", "book", "different text"));
    expect(JSON.parse(conflict.at(-1)?.data ?? "")).toMatchObject({
      status: 409,
      error: { code: "conversation_conflict" },
    });
  });

  it("a retry of a settled key over SSE replays only the final view", async () => {
    const t = await startHost();
    const token = await t.token();
    await collect(await sseTurn(t, token, "s1", "k1", "When are you open on Monday?"));
    const calls = t.calls();
    const replay = await collect(
      await sseTurn(t, token, "s1", "k1", "When are you open on Monday?"),
    );
    expect(replay.map((e) => e.event)).toEqual(["result"]);
    expect(JSON.parse(replay[0]?.data ?? "")).toMatchObject({
      status: "completed",
      replayed: true,
    });
    expect(t.calls()).toBe(calls);
  });
});
