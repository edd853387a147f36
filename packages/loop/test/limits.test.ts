import type { Msg } from "@alma-harness/core";
import { DEFAULT_FINAL_ANSWER_NOTICE, DEFAULT_TIME_NOTICE } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, tool, uncertain, until, log } from "./harness.js";

const lastBlock = (messages: readonly Msg[]) => messages.at(-1)?.blocks.at(-1);
const counter = () => {
  const state = { runs: 0 };
  return { state, tool: tool("count", () => ++state.runs) };
};

describe("the call limit and the final-answer notice", () => {
  it("the last call carries a harness notice, tools stay advertised, and an answer reports callLimit answered", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedText("final")],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(lastBlock(h.model.requests[0]!.messages)).toEqual({
      type: "text",
      text: DEFAULT_FINAL_ANSWER_NOTICE,
      origin: "harness",
    });
    expect(h.model.requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
    expect(result.callLimit).toEqual({ maxCalls: 1, answered: true });
    expect(result.terminalReason).toBe("call_limit");
    expect(result.reply).toEqual([{ type: "text", text: "final" }]);
    // the notice is in that request only, never persisted
    expect(JSON.stringify(log(outcome))).not.toContain(DEFAULT_FINAL_ANSWER_NOTICE);
  });

  it("a function tool called anyway on the last call does not run; the unanswered turn lists it with isError", async () => {
    const c = counter();
    const h = harness({
      tools: [c.tool],
      limits: { maxCalls: 2 },
      script: [
        scriptedToolCall({ id: "c1", name: "count" }),
        scriptedToolCall({ id: "c2", name: "count" }, { text: "one more" }),
      ],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(c.state.runs).toBe(1);
    expect(result.callLimit).toEqual({ maxCalls: 2, answered: false });
    expect(result.reply).toEqual([]);
    expect(result.stopReason).toBe("tool_use");
    expect(result.toolCalls).toEqual([
      { id: "c1", name: "count", input: {}, isError: false },
      { id: "c2", name: "count", input: {}, isError: true },
    ]);
    expect(log(outcome).at(-1)?.blocks).toEqual([
      {
        type: "tool_result",
        callId: "c2",
        name: "count",
        output: "not run: a final answer was requested",
        isError: true,
        code: "TOOL_NOT_RUN",
      },
    ]);
    expect(h.model.requests[0]?.messages).toHaveLength(1);
    expect(lastBlock(h.model.requests[1]!.messages)).toMatchObject({ origin: "harness" });
  });

  it("one call more than needed: no notice, a plain answer", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 3 },
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("done"),
      ],
    });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("answered");
    expect(result.callLimit).toBeUndefined();
    expect(
      h.model.requests.every(
        (r) => !JSON.stringify(r.messages).includes(DEFAULT_FINAL_ANSWER_NOTICE),
      ),
    ).toBe(true);
  });

  it("exactly at the limit: the answering step was the last and carried the notice", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 2 },
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("done"),
      ],
    });
    const result = completed(await h.run());
    expect(result.callLimit).toEqual({ maxCalls: 2, answered: true });
  });

  it("without advertised tools the last call gets no notice and its answer is plain", async () => {
    const h = harness({ limits: { maxCalls: 1 }, script: [scriptedText("hi")] });
    const result = completed(await h.run());
    expect(h.model.requests[0]?.messages).toHaveLength(1);
    expect(h.model.requests[0]?.messages[0]?.blocks).toEqual([{ type: "text", text: "Hello" }]);
    expect(result.terminalReason).toBe("answered");
  });

  it("finalAnswerNotice replaces the notice text", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 1, finalAnswerNotice: "Wrap up." },
      script: [scriptedText("ok")],
    });
    await h.run();
    expect(lastBlock(h.model.requests[0]!.messages)).toEqual({
      type: "text",
      text: "Wrap up.",
      origin: "harness",
    });
  });
});

describe("the step limit", () => {
  it("maxSteps below maxCalls ends the turn as stepLimit", async () => {
    const c = counter();
    const h = harness({
      tools: [c.tool],
      limits: { maxCalls: 5, maxSteps: 2 },
      script: [
        scriptedToolCall({ id: "c1", name: "count" }),
        scriptedToolCall({ id: "c2", name: "count" }),
      ],
    });
    const result = completed(await h.run());
    expect(result.stepLimit).toEqual({ maxSteps: 2, answered: false });
    expect(result.callLimit).toBeUndefined();
    expect(c.state.runs).toBe(1);
  });

  it("a tie between calls and steps reports callLimit", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 2, maxSteps: 2 },
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedToolCall({ id: "c2", name: "echo", input: { text: "y" } }),
      ],
    });
    const result = completed(await h.run());
    expect(result.callLimit).toEqual({ maxCalls: 2, answered: false });
    expect(result.stepLimit).toBeUndefined();
  });

  it("a pause on the last step ends the turn unanswered", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedText("searching", { stopReason: "pause_turn" })],
    });
    const result = completed(await h.run());
    expect(result.callLimit).toEqual({ maxCalls: 1, answered: false });
    expect(result.reply).toEqual([]);
  });

  it("a pause re-sends the turn as another step", async () => {
    const h = harness({
      limits: { maxCalls: 3 },
      script: [scriptedText("part", { stopReason: "pause_turn" }), scriptedText("whole")],
    });
    const result = completed(await h.run());
    expect(h.model.calls).toBe(2);
    expect(result.reply).toEqual([{ type: "text", text: "whole" }]);
  });
});

describe("the time limit", () => {
  /** A tool that moves the clock so `leftMs` remain before the deadline when the next step starts. */
  function timed(leftMs: number) {
    const h = harness({
      tools: [
        tool("wait", () => {
          h.clock.set(deadline - leftMs);
          return "waited";
        }),
      ],
      script: [scriptedToolCall({ id: "c1", name: "wait" }), scriptedText("in time")],
    });
    const deadline = h.clock.now() + 600_000;
    return { h, deadline };
  }

  it("with exactly the reserve left, the next step is the last: time notice and timeLimit", async () => {
    const { h, deadline } = timed(60_000);
    const result = completed(await h.run({ deadlineAt: deadline }));
    expect(result.timeLimit).toEqual({ answered: true });
    expect(lastBlock(h.model.requests[1]!.messages)).toEqual({
      type: "text",
      text: DEFAULT_TIME_NOTICE,
      origin: "harness",
    });
  });

  it("with one millisecond more than the reserve, the next step is ordinary", async () => {
    const { h, deadline } = timed(60_001);
    const result = completed(await h.run({ deadlineAt: deadline }));
    expect(result.timeLimit).toBeUndefined();
    expect(result.terminalReason).toBe("answered");
  });

  it("the first step is never the last by time", async () => {
    const h = harness({ tools: [echoTool], script: [scriptedText("quick")] });
    const result = completed(await h.run({ deadlineAt: h.clock.now() + 1_000 }));
    expect(result.timeLimit).toBeUndefined();
  });

  it("a deadline that passes makes the turn uncertain (cause deadline)", async () => {
    let started = false;
    const slow = tool("slow", (_i, ctx) => {
      started = true;
      return new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
      );
    });
    const h = harness({ tools: [slow], script: [scriptedToolCall({ id: "c1", name: "slow" })] });
    const turn = h.run({ deadlineAt: h.clock.now() + 5_000 });
    await until(() => started, "handler started");
    h.clock.advance(5_000);
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("deadline");
    expect(outcome.failure.kind).toBe("timeout");
  });
});

describe("a turn's own call limit (TurnInput.maxCalls)", () => {
  it("narrows the engine's: the turn ends at its own limit, and the next turn has the engine's again", async () => {
    const loop = () => [
      scriptedToolCall({ id: "c1", name: "echo", input: { text: "a" } }),
      scriptedToolCall({ id: "c2", name: "echo", input: { text: "b" } }),
      scriptedToolCall({ id: "c3", name: "echo", input: { text: "c" } }),
      scriptedText("done"),
    ];
    // The narrowed turn reads the first two answers; the next turn reads a whole loop.
    const script = [...loop().slice(0, 2), ...loop()];
    const h = harness({ tools: [echoTool], limits: { maxCalls: 4 }, script });
    const narrowed = completed(await h.run({ maxCalls: 2 }));
    expect(narrowed.callLimit).toEqual({ maxCalls: 2, answered: false });
    expect(h.model.calls).toBe(2);
    const whole = completed(await h.run());
    // The engine's own limit: its fourth call was the last, and it answered.
    expect(whole.callLimit).toEqual({ maxCalls: 4, answered: true });
    expect(h.model.calls).toBe(2 + 4);
  });

  it("may not widen it, nor be anything but an integer from 1: refused before anything runs", async () => {
    const h = harness({ limits: { maxCalls: 4 }, script: [scriptedText("x")] });
    for (const maxCalls of [0, 5, 1.5, "2"]) {
      await expect(h.run({ maxCalls: maxCalls as number })).rejects.toThrow(/maxCalls/);
    }
    expect(completed(await h.run({ maxCalls: 4 })).reply).toEqual([{ type: "text", text: "x" }]);
    expect(h.model.calls).toBe(1);
  });
});
