import { describe, expect, it } from "vitest";
import { scriptedReasoning, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { echoTool, harness, log } from "./harness.js";

describe("a turn", () => {
  it("answers with text in one step, priced and settled", async () => {
    const h = harness({ script: [scriptedText("Hello there!")] });
    const outcome = await h.run();
    expect(outcome.status).toBe("completed");
    if (outcome.status !== "completed") return;
    expect(outcome.result.reply).toEqual([{ type: "text", text: "Hello there!" }]);
    expect(outcome.result.terminalReason).toBe("answered");
    expect(outcome.result.stopReason).toBe("end_turn");
    // 10 input tokens at $3/Mtok + 5 output at $15/Mtok = 30 + 75 = 105 micro-dollars
    expect(outcome.result.costMicros).toBe(105);
    expect(outcome.result.receipts).toHaveLength(1);
    expect(log(outcome).map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(log(outcome).every((m) => m.meta?.turn === "turn-1")).toBe(true);
    expect(h.model.requests[0]?.system).toEqual([{ type: "text", text: "You are a test agent." }]);
  });

  it("runs a tool then answers, with results in the log after the calls", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "hi" } }),
        scriptedText("done"),
      ],
    });
    const outcome = await h.run();
    expect(outcome.status).toBe("completed");
    if (outcome.status !== "completed") return;
    expect(log(outcome).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(log(outcome)[2]?.blocks).toEqual([
      { type: "tool_result", callId: "c1", name: "echo", output: { echoed: "hi" }, isError: false },
    ]);
    expect(outcome.result.toolCalls).toEqual([
      { id: "c1", name: "echo", input: { text: "hi" }, isError: false },
    ]);
    expect(h.model.requests).toHaveLength(2);
    expect(h.model.requests[1]?.messages).toHaveLength(3);
    expect(h.model.requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
  });

  it("records the context version and message revision each request consumed", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedText("ok"),
      ],
    });
    await h.run({ revision: 4 });
    const requests = h.events.filter((e) => e.type === "model.request");
    expect(requests.map((e) => (e as { messageRevision: number }).messageRevision)).toEqual([5, 7]);
    const revisions = h.events
      .filter((e) => e.type === "message.completed")
      .map((e) => (e as { revision: number }).revision);
    expect(revisions).toEqual([5, 6, 7, 8]);
  });

  it("keeps reasoning in the log as one block per burst, never in the reply", async () => {
    const h = harness({ script: [scriptedReasoning(["think ", "more"], scriptedText("answer"))] });
    const outcome = await h.run();
    if (outcome.status !== "completed") throw new Error(outcome.status);
    expect(log(outcome)[1]?.blocks).toEqual([
      {
        type: "reasoning",
        text: "think more",
        signature: "sig",
        provider: "fake",
        model: "fake-main",
      },
      { type: "text", text: "answer" },
    ]);
    expect(outcome.result.reply).toEqual([{ type: "text", text: "answer" }]);
  });

  it("freezes every snapshot handed to the model", async () => {
    const h = harness({ script: [scriptedText("x")] });
    await h.run();
    const request = h.model.requests[0]!;
    expect(Object.isFrozen(request)).toBe(true);
    expect(Object.isFrozen(request.messages[0])).toBe(true);
    expect(Object.isFrozen(request.messages[0]?.blocks[0])).toBe(true);
  });
});
