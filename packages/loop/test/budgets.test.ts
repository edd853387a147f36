import { scriptedText, scriptedToolCall, scriptedUsage } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, tool, log } from "./harness.js";

const echo = (id: string) => ({ id, name: "echo", input: { text: id } });
const tokens = (n: number) => ({ inputTokens: n - 5, outputTokens: 5 });

describe("maxToolCalls: requested intentions, even invalid ones", () => {
  it("exactly at the limit: every call runs and the model may still answer", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxToolCalls: 2 },
      script: [scriptedToolCall([echo("c1"), echo("c2")]), scriptedText("done")],
    });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("answered");
    expect(result.toolCalls.every((c) => !c.isError)).toBe(true);
  });

  it("one over: the extra intent is durable, reaches no policy, and the turn stops as a budget stop", async () => {
    const decided: string[] = [];
    const h = harness({
      tools: [echoTool],
      limits: { maxToolCalls: 2 },
      permissions: {
        decide: (r) => {
          decided.push(r.callId);
          return "allow";
        },
      },
      script: [scriptedToolCall([echo("c1"), echo("c2"), echo("c3")])],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(result.budget).toEqual({ metric: "maxToolCalls", answered: false });
    expect(result.terminalReason).toBe("budget");
    expect(decided).toEqual(["c1", "c2"]);
    expect(
      log(outcome)
        .at(-1)
        ?.blocks.map((b) => (b as { code?: string }).code),
    ).toEqual([undefined, undefined, "TOOL_BUDGET_EXCEEDED"]);
    expect(
      h
        .trail("lifecycle")
        .filter((e) => e.action === "tool.call")
        .map((e) => e.callId),
    ).toEqual(["c1", "c2", "c3"]);
    expect(h.model.calls).toBe(1);
  });

  it("unknown and invalid intentions count against the budget", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxToolCalls: 2 },
      script: [
        scriptedToolCall([
          { id: "c1", name: "ghost" },
          { id: "c2", name: "echo", rawArguments: "{" },
        ]),
        scriptedToolCall(echo("c3")),
      ],
    });
    const result = completed(await h.run());
    expect(result.budget?.metric).toBe("maxToolCalls");
    expect(result.toolCalls.map((c) => c.isError)).toEqual([true, true, true]);
  });

  it("warns once, durably, at half the budget", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxToolCalls: 4 },
      script: [
        scriptedToolCall(echo("c1")),
        scriptedToolCall(echo("c2")),
        scriptedToolCall(echo("c3")),
        scriptedText("ok"),
      ],
    });
    const result = completed(await h.run());
    expect(h.eventsOf("budget.warning").map((e) => [e.metric, e.used, e.limit])).toEqual([
      ["maxToolCalls", 2, 4],
    ]);
    expect(
      h
        .trail("lifecycle")
        .filter((e) => e.action === "budget.warning")
        .map((e) => e.detail),
    ).toEqual(["maxToolCalls:2:4"]);
    expect(result.warnings).toEqual(["maxToolCalls:50%"]);
  });

  it("below half there is no warning", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxToolCalls: 3 },
      script: [scriptedToolCall(echo("c1")), scriptedText("ok")],
    });
    completed(await h.run());
    expect(h.eventsOf("budget.warning")).toEqual([]);
  });
});

describe("maxModelTokens: cumulative reported usage", () => {
  it("an answer that lands exactly on the limit completes", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxModelTokens: 30 },
      script: [
        scriptedUsage(tokens(15), scriptedToolCall(echo("c1"))),
        scriptedUsage(tokens(15), scriptedText("done")),
      ],
    });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("answered");
    expect(result.reply).toEqual([{ type: "text", text: "done" }]);
  });

  it("a tool response exactly at the limit runs no tool", async () => {
    let ran = 0;
    const t = tool("t", () => ++ran);
    const h = harness({
      tools: [t],
      limits: { maxModelTokens: 30 },
      script: [
        scriptedUsage(tokens(15), scriptedToolCall({ id: "c1", name: "t" })),
        scriptedUsage(tokens(15), scriptedToolCall({ id: "c2", name: "t" })),
      ],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(ran).toBe(1);
    expect(result.budget).toEqual({ metric: "maxModelTokens", answered: false });
    expect(log(outcome).at(-1)?.blocks[0]).toMatchObject({
      callId: "c2",
      code: "TOOL_BUDGET_EXCEEDED",
      isError: true,
    });
  });

  it("a tool response one under the limit runs its tool", async () => {
    let ran = 0;
    const t = tool("t", () => ++ran);
    const h = harness({
      tools: [t],
      limits: { maxModelTokens: 30 },
      script: [
        scriptedUsage(tokens(29), scriptedToolCall({ id: "c1", name: "t" })),
        scriptedUsage({ inputTokens: 0, outputTokens: 1 }, scriptedText("ok")),
      ],
    });
    completed(await h.run());
    expect(ran).toBe(1);
  });

  it("an overshooting response is recorded (receipt kept) and blocks the next unit", async () => {
    let ran = 0;
    const t = tool("t", () => ++ran);
    const h = harness({
      tools: [t],
      limits: { maxModelTokens: 20 },
      script: [scriptedUsage(tokens(50), scriptedToolCall({ id: "c1", name: "t" }))],
    });
    const result = completed(await h.run());
    expect(ran).toBe(0);
    expect(result.usage).toMatchObject({ inputTokens: 45, outputTokens: 5 });
    expect(result.receipts).toHaveLength(1);
    expect(h.model.calls).toBe(1);
  });

  it("cache tokens count as prompt tokens", async () => {
    let ran = 0;
    const t = tool("t", () => ++ran);
    const h = harness({
      tools: [t],
      limits: { maxModelTokens: 100 },
      script: [
        scriptedUsage(
          { inputTokens: 5, outputTokens: 5, cacheReadTokens: 90 },
          scriptedToolCall({ id: "c1", name: "t" }),
        ),
      ],
    });
    expect(completed(await h.run()).budget?.metric).toBe("maxModelTokens");
    expect(ran).toBe(0);
  });

  it("warns once at half, durably", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxModelTokens: 30 },
      script: [
        scriptedUsage(tokens(15), scriptedToolCall(echo("c1"))),
        scriptedUsage(tokens(10), scriptedText("ok")),
      ],
    });
    const result = completed(await h.run());
    expect(h.eventsOf("budget.warning").map((e) => [e.metric, e.used])).toEqual([
      ["maxModelTokens", 15],
    ]);
    expect(result.warnings).toEqual(["maxModelTokens:50%"]);
  });

  it("tokens spent by a delegate inside a tool stop the next main step", async () => {
    const research = tool(
      "research",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const h = harness({
      tools: [research],
      limits: { maxModelTokens: 40 },
      script: [scriptedUsage(tokens(15), scriptedToolCall({ id: "c1", name: "research" }))],
      smallScript: [scriptedUsage(tokens(30), scriptedText("found"))],
    });
    const result = completed(await h.run());
    expect(result.budget).toEqual({ metric: "maxModelTokens", answered: false });
    expect(h.model.calls).toBe(1);
    expect(result.usage.inputTokens).toBe(35);
  });
});
