import { describe, expect, it } from "vitest";
import type { SseEvent } from "../src/sse-events.js";
import { call, collect, hostPerTest, pendingAsk, pull, sseTurn, type TestHost } from "./helpers.js";
import { readSseEvents } from "../src/sse-events.js";

const startHost = hostPerTest();

/** `GET /v1/turns/:rootKey` as a stream, from after `lastId` (absent: from the start). */
function follow(
  t: TestHost,
  token: string,
  rootKey: string,
  lastId?: string,
  signal?: AbortSignal,
) {
  return fetch(`${t.url}/v1/turns/${rootKey}`, {
    headers: {
      authorization: `Bearer ${token}`,
      accept: "text/event-stream",
      ...(lastId !== undefined ? { "last-event-id": lastId } : {}),
    },
    ...(signal ? { signal } : {}),
  });
}

/** The step texts of a stream, with the id each one carried. */
const texts = (events: readonly SseEvent[]) =>
  events
    .filter((e) => e.event === "text")
    .map((e) => ({ id: e.id, ...(JSON.parse(e.data) as { step: number; text: string }) }));

describe("SSE streams a client can resume (Last-Event-ID)", () => {
  it("a reconnect after each settled step yields every later event exactly once, then the result", async () => {
    const t = await startHost();
    const token = await t.token();
    const live = await collect(await sseTurn(t, token, "s1", "k1", "When are you open on Monday?"));
    const steps = texts(live);
    expect(steps.map((s) => [s.id, s.step])).toEqual([
      ["1", 1],
      ["2", 2],
    ]);
    const result = live.at(-1);
    expect([result?.event, result?.id]).toEqual(["result", "2.end"]);
    const rootKey = (JSON.parse(result?.data ?? "{}") as { rootKey: string }).rootKey;
    for (const [lastId, expected] of [
      [undefined, steps],
      ["1", steps.slice(1)],
      ["2", []],
      ["2.end", []],
    ] as const) {
      const res = await follow(t, token, rootKey, lastId);
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      const events = await collect(res);
      expect(texts(events), `after ${lastId}`).toEqual(expected);
      expect(events.filter((e) => e.event === "result")).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ event: "result", id: "2.end" });
      expect(JSON.parse(events.at(-1)?.data ?? "")).toMatchObject({ status: "completed" });
    }
  });

  it("a parked turn's stream ends with its ask; a reconnect from the ask waits for the decision and reads on once", async () => {
    const t = await startHost();
    const token = await t.token();
    const first = await collect(await sseTurn(t, token, "s1", "k1", "Please book an appointment"));
    const ask = await pendingAsk(t);
    const permission = first.find((e) => e.event === "permission");
    expect(permission?.id).toMatch(new RegExp(`^\\d+\\.${ask.id}$`));
    // The parked view carries no id of its own: the client's last id stays on the ask.
    expect(first.at(-1)).toMatchObject({ event: "result", id: permission?.id });
    const before = texts(first).map((s) => s.step);

    const reconnect = await follow(t, token, ask.rootKey, permission?.id);
    const events = readSseEvents(reconnect.body as ReadableStream<Uint8Array>);
    const pending = pull(events, (e) => e.event === "result");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const approve = `/v1/admin/asks/${ask.id}/approve`;
    expect((await call(t.url, approve, { method: "POST", token: t.admin })).status).toBe(200);
    const after = await pending;
    const later = texts(after).map((s) => s.step);
    expect(later.length).toBeGreaterThan(0);
    expect(later.some((s) => before.includes(s))).toBe(false);
    expect(after.filter((e) => e.event === "permission")).toEqual([]);
    expect(JSON.parse(after.at(-1)?.data ?? "")).toMatchObject({
      status: "completed",
      delivered: [expect.stringMatching(/^Confirmed/)],
    });
    // From the start, the whole turn: every step once, across both runs.
    const whole = texts(await collect(await follow(t, token, ask.rootKey)));
    expect(whole.map((s) => s.step)).toEqual([...before, ...later]);
  });

  it("refuses a Last-Event-ID it never sent (422) and another tenant's turn (404), before any stream", async () => {
    const t = await startHost();
    const token = await t.token();
    const done = await collect(await sseTurn(t, token, "s1", "k1", "When are you open on Monday?"));
    const rootKey = (JSON.parse(done.at(-1)?.data ?? "{}") as { rootKey: string }).rootKey;
    for (const bad of ["abc", "1.ask_zz", "-1", "1234567", "1.end.x", "1.ASK"]) {
      const res = await follow(t, token, rootKey, bad);
      expect([res.status, res.headers.get("content-type")], bad).toEqual([
        422,
        expect.stringContaining("application/json"),
      ]);
    }
    const other = await t.token("harbor-dental", "p-2001");
    expect((await follow(t, other, rootKey)).status).toBe(404);
  });

  it("a replay after the session was erased shows nothing stored: a resync, then the erased view", async () => {
    const t = await startHost();
    const token = await t.token();
    const done = await collect(await sseTurn(t, token, "s1", "k1", "When are you open on Monday?"));
    const rootKey = (JSON.parse(done.at(-1)?.data ?? "{}") as { rootKey: string }).rootKey;
    expect((await call(t.url, "/v1/sessions/s1", { method: "DELETE", token })).status).toBe(204);
    const events = await collect(await follow(t, token, rootKey));
    expect(texts(events)).toEqual([]);
    expect(events.map((e) => e.event)).toEqual(["resync", "error"]);
    expect(JSON.parse(events.at(-1)?.data ?? "")).toMatchObject({
      status: 410,
      error: { code: "unavailable" },
    });
  });
});
