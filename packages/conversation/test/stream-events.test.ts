import { describe, expect, it } from "vitest";
import {
  ConversationStreamResyncError,
  EventRefusedError,
  STREAM_QUEUE_LIMIT,
  conversationRootKey,
} from "@alma-harness/conversation";
import { defineTool, DuplicateEventError } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { humanMessage, SCOPE, setup } from "./harness.js";

const noop = defineTool({
  name: "noop",
  description: "Does nothing.",
  input: { type: "object" },
  handler: () => "ok",
});

describe("streamTurn queue", () => {
  it("detaches a reader that falls behind with an overflow resync, while the turn completes", async () => {
    const calls = Array.from({ length: STREAM_QUEUE_LIMIT + 1 }, (_, i) => ({
      id: `c${i}`,
      name: "noop",
    }));
    const t = setup({
      tools: [noop],
      script: [scriptedToolCall(calls), scriptedText("done")],
      config: { limits: { maxParallelToolCalls: 64 } },
    });
    const stream = t.runner.streamTurn(t.request("k1"));
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    await stream.result;
    await expect(iterator.next()).rejects.toBeInstanceOf(ConversationStreamResyncError);
    expect((await stream.result).status).toBe("completed");
  });

  it("gives a late first iterator only the freshly read final view", async () => {
    const t = setup({ script: [scriptedText("hello")] });
    const stream = t.runner.streamTurn(t.request("k1"));
    await stream.result;
    const seen = [];
    for await (const event of stream) seen.push(event);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      type: "result",
      view: { status: "completed", replayed: true },
    });
  });

  it("permits one iterator", async () => {
    const t = setup({ script: [scriptedText("hello")] });
    const stream = t.runner.streamTurn(t.request("k1"));
    stream[Symbol.asyncIterator]();
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/one iterator/);
    await stream.result;
  });
});

describe("recordEvents", () => {
  const message = humanMessage;

  it("records a batch once, replays it by id, and renders product-side messages as the person's side", async () => {
    const t = setup({ script: [scriptedText("ok")] });
    expect(
      await t.runner.recordEvents({ scope: SCOPE, sessionId: "s1", events: [message("m1")] }),
    ).toEqual({ status: "recorded", appended: 1, replayed: 0 });
    expect(
      await t.runner.recordEvents({
        scope: SCOPE,
        sessionId: "s1",
        events: [message("m1"), message("m2", "second")],
      }),
    ).toEqual({ status: "recorded", appended: 1, replayed: 1 });
    await t.runner.runTurn(t.request("k1"));
    const first = t.model.requests[0]?.messages[0];
    expect(first?.role).toBe("user");
    expect(first?.blocks[0]).toMatchObject({
      type: "text",
      text: expect.stringContaining("Hi, this is Ana"),
    });
  });

  it("refuses a present id with other content as a conflict, writing nothing", async () => {
    const t = setup();
    await t.runner.recordEvents({ scope: SCOPE, sessionId: "s1", events: [message("m1")] });
    const error = await t.runner
      .recordEvents({
        scope: SCOPE,
        sessionId: "s1",
        events: [message("m1", "changed"), message("m3")],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EventRefusedError);
    expect((error as EventRefusedError).reason).toBe("conflict");
    expect((await t.stores.sessions.load(SCOPE, "s1")).messages).toHaveLength(1);
  });

  it("refuses an undelivered note for a turn without a persisted reply (no_reply)", async () => {
    const t = setup();
    const error = await t.runner
      .recordEvents({
        scope: SCOPE,
        sessionId: "s1",
        events: [{ id: "u1", at: "2026-10-04T12:00:00Z", kind: "undelivered", turn: "c1_nope" }],
      })
      .catch((e: unknown) => e);
    expect((error as EventRefusedError).reason).toBe("no_reply");
  });

  it("records an undelivered note for a turn that replied", async () => {
    const t = setup({ script: [scriptedText("reply")] });
    await t.runner.runTurn(t.request("k1"));
    const turn = conversationRootKey(SCOPE, "s1", "k1");
    const out = await t.runner.recordEvents({
      scope: SCOPE,
      sessionId: "s1",
      events: [{ id: "u1", at: "2026-10-04T12:00:00Z", kind: "undelivered", turn }],
    });
    expect(out.status).toBe("recorded");
  });

  it("answers busy while a turn holds the session", async () => {
    const t = setup({ script: [scriptedText("x")] });
    const turn = t.runner.runTurn(t.request("k1"));
    const out = await t.runner.recordEvents({
      scope: SCOPE,
      sessionId: "s1",
      events: [message("m1")],
    });
    expect(out.status).toBe("busy");
    await turn;
  });

  it("bounds a batch to 1-20 events", async () => {
    const t = setup();
    await expect(
      t.runner.recordEvents({ scope: SCOPE, sessionId: "s1", events: [] }),
    ).rejects.toThrow(/1-20/);
    const many = Array.from({ length: 21 }, (_, i) => message(`m${i}`));
    await expect(
      t.runner.recordEvents({ scope: SCOPE, sessionId: "s1", events: many }),
    ).rejects.toThrow(/1-20/);
    expect(
      (await t.runner.recordEvents({ scope: SCOPE, sessionId: "s1", events: many.slice(0, 20) }))
        .status,
    ).toBe("recorded");
  });

  it("rejects a turn input whose event id is already in the log, before admission", async () => {
    const t = setup({ script: [scriptedText("x")] });
    const withEvent = (key: string) => ({
      ...t.request(key),
      input: {
        role: "user" as const,
        blocks: [{ type: "text" as const, text: "hi" }],
        meta: { event: { id: "in-1", kind: "input" as const } },
      },
    });
    expect((await t.runner.runTurn(withEvent("k1"))).status).toBe("completed");
    await expect(t.runner.runTurn(withEvent("k2"))).rejects.toBeInstanceOf(DuplicateEventError);
    expect((await t.runner.runTurn(withEvent("k1"))).status).toBe("completed");
  });
});
