import { formatSse, type LoopEvent, loopEventToSse } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness } from "./harness.js";

describe("loop events", () => {
  it("a tool turn follows the canonical order, each request naming the revision it consumed", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    completed(await h.run());
    const lines = h.events.map((e) => {
      if (e.type === "message.completed") return `${e.type} ${e.role} ${e.revision}`;
      if (e.type === "model.request") return `${e.type} ${e.contextVersion} ${e.messageRevision}`;
      if (e.type === "model.response") return `${e.type} ${e.stopReason}`;
      return e.type;
    });
    // Seed 004, "02 / MULTI-ROUND LOOP": agent.started and agent.stopped bookend one turn.started and
    // one turn.completed.
    expect(lines).toEqual([
      "agent.started",
      "turn.started",
      "message.completed user 1",
      "model.request 1 1",
      "cost.receipt",
      "model.response tool_use",
      "message.completed assistant 2",
      "tool.call",
      "policy.decision",
      "tool.result",
      "message.completed user 3",
      "model.request 1 3",
      "cost.receipt",
      "model.response end_turn",
      "message.completed assistant 4",
      "step.text",
      "turn.completed",
      "agent.stopped",
    ]);
    // the lifecycle trail carries the same revisions, durably
    expect(
      h
        .trail("lifecycle")
        .filter((e) => e.action === "model.request")
        .map((e) => [e.contextVersion, e.messageRevision]),
    ).toEqual([
      [1, 1],
      [1, 3],
    ]);
  });

  it("every event carries the turn id", async () => {
    const h = harness({ script: [scriptedText("ok")] });
    completed(await h.run());
    expect(h.events.every((e) => e.turnId === "turn-1")).toBe(true);
  });
});

describe("SSE mapping", () => {
  const event: LoopEvent = {
    type: "step.text",
    turnId: "t1",
    step: 1,
    text: "line one\nline two\r\nthree",
  };

  it("names the frame by the event type and carries the event as one line of JSON", () => {
    const frame = loopEventToSse(event);
    expect(frame.event).toBe("step.text");
    expect(frame.data).not.toMatch(/[\r\n]/);
    expect(JSON.parse(frame.data)).toEqual(event);
  });

  it("formats a frame with its id", () => {
    expect(
      formatSse(loopEventToSse({ type: "turn.started", turnId: "t1", sessionId: "s1" }), "7"),
    ).toBe(
      'id: 7\nevent: turn.started\ndata: {"type":"turn.started","turnId":"t1","sessionId":"s1"}\n\n',
    );
  });

  it("splits multi-line data into data lines", () => {
    expect(formatSse({ event: "note", data: "a\nb\r\nc" })).toBe(
      "event: note\ndata: a\ndata: b\ndata: c\n\n",
    );
  });

  it("rejects CR or LF in the event name or the id", () => {
    expect(() => formatSse({ event: "bad\nname", data: "{}" })).toThrow(TypeError);
    expect(() => formatSse({ event: "ok", data: "{}" }, "1\r2")).toThrow(TypeError);
  });
});
