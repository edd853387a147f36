import { SEARCH_TOOLS_NAME, toolError } from "@alma-harness/core";
import { createEngine, EngineConfigError } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, tool, log } from "./harness.js";

const reply = tool("reply", (input) => ({ sent: input.text ?? null }));
const fails = tool("lookup", () => toolError("not found"));

describe("terminal tools", () => {
  it("a successful terminal tool ends the turn on that step, with no closing model call", async () => {
    const h = harness({
      tools: [reply, echoTool],
      terminalTools: ["reply"],
      script: [
        scriptedToolCall({ id: "c1", name: "reply", input: { text: "hi" } }, { text: "Sending." }),
      ],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(result.terminalReason).toBe("terminal_tool");
    expect(result.stopReason).toBe("tool_use");
    expect(result.reply).toEqual([{ type: "text", text: "Sending." }]);
    expect(h.model.calls).toBe(1);
    expect(log(outcome).map((m) => m.role)).toEqual(["user", "assistant", "user"]);
  });

  it("an erroring sibling keeps the turn going so the model reads it", async () => {
    const h = harness({
      tools: [reply, fails],
      terminalTools: ["reply"],
      script: [
        scriptedToolCall([
          { id: "c1", name: "lookup" },
          { id: "c2", name: "reply", input: { text: "hi" } },
        ]),
        scriptedText("Could not find it."),
      ],
    });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("answered");
    expect(h.model.calls).toBe(2);
    // every call of the step ran
    expect(result.toolCalls.map((c) => [c.id, c.isError])).toEqual([
      ["c1", true],
      ["c2", false],
    ]);
  });

  it("an unknown sibling is an error result too: no terminal ending", async () => {
    const h = harness({
      tools: [reply],
      terminalTools: ["reply"],
      script: [
        scriptedToolCall([
          { id: "c1", name: "reply" },
          { id: "c2", name: "ghost" },
        ]),
        scriptedText("ok"),
      ],
    });
    expect(completed(await h.run()).terminalReason).toBe("answered");
  });

  it("the terminal tool itself failing keeps the turn going", async () => {
    const flaky = tool("reply", () => toolError("channel closed"));
    const h = harness({
      tools: [flaky],
      terminalTools: ["reply"],
      script: [scriptedToolCall({ id: "c1", name: "reply" }), scriptedText("I could not send it.")],
    });
    expect(completed(await h.run()).terminalReason).toBe("answered");
  });

  it("on the last call the terminal tool does not run: the limit ending stands", async () => {
    let sent = 0;
    const counted = tool("reply", () => {
      sent += 1;
      return "sent";
    });
    const h = harness({
      tools: [counted],
      terminalTools: ["reply"],
      limits: { maxCalls: 1 },
      script: [scriptedToolCall({ id: "c1", name: "reply" })],
    });
    const result = completed(await h.run());
    expect(sent).toBe(0);
    expect(result.terminalReason).toBe("call_limit");
    expect(result.callLimit).toEqual({ maxCalls: 1, answered: false });
  });

  it("delegates ignore terminal tools", async () => {
    const parent = tool(
      "research",
      async (_i, ctx) =>
        (
          await ctx.models.delegate({
            tier: "fast",
            sensitivity: "internal",
            prompt: "go",
            tools: ["reply"],
          })
        ).text,
    );
    const h = harness({
      tools: [reply, parent],
      terminalTools: ["reply"],
      script: [scriptedToolCall({ id: "m1", name: "research" }), scriptedText("Parent done.")],
      smallScript: [scriptedToolCall({ id: "d1", name: "reply" }), scriptedText("child done")],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(h.small.calls).toBe(2);
    expect(result.terminalReason).toBe("answered");
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ callId: "m1", output: "child done" });
  });
});

describe("terminal tools: construction", () => {
  const base = harness();
  const config = (terminalTools: readonly string[], tools = [reply]) => ({
    clients: [base.model],
    policy: {
      resolve: () => ({
        clientId: "fake",
        model: "fake-main",
        maxOutputTokens: 10,
        cache: false as const,
      }),
    },
    tools,
    terminalTools,
    limits: { maxCalls: 2 },
    calls: {} as never,
    audit: base.audit,
    clock: base.clock,
    ids: { next: (p: string) => p },
  });

  it("a terminal tool that is not registered is a construction error naming it", () => {
    expect(() => createEngine(config(["ghost"]))).toThrow(
      new EngineConfigError('terminal tool "ghost" is not registered'),
    );
  });

  it("search_tools is never a terminal tool", () => {
    expect(() => createEngine(config([SEARCH_TOOLS_NAME]))).toThrow(EngineConfigError);
  });

  it("at most 64 distinct names: 64 builds, 65 does not", () => {
    const many = Array.from({ length: 65 }, (_, i) => tool(`t${i}`, () => 1));
    expect(() =>
      createEngine(
        config(
          many.slice(0, 64).map((t) => t.name),
          many,
        ),
      ),
    ).not.toThrow();
    expect(() =>
      createEngine(
        config(
          many.map((t) => t.name),
          many,
        ),
      ),
    ).toThrow(/at most 64/);
  });

  it("a duplicate tool name and a handler that is not a function are construction errors naming the tool", () => {
    expect(() => createEngine(config([], [reply, reply]))).toThrow(
      /tool "reply" is registered twice/,
    );
    const broken = { ...reply, name: "broken", handler: "nope" } as never;
    expect(() => createEngine(config([], [broken]))).toThrow(/tool "broken"/);
  });
});
