import { defineTool, type Msg, toolError } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, hashed, log, tool, uncertain } from "./harness.js";

/** A permission controller that records every call it was asked about. */
function spyPolicy() {
  const asked: string[] = [];
  const decide = (r: { tool: string }) => {
    asked.push(r.tool);
    return "allow" as const;
  };
  return { asked, controller: { decide } };
}

/** The output of the first result in message `index`. */
function outputOf(messages: readonly Msg[], index: number): unknown {
  const block = messages[index]?.blocks[0];
  return block?.type === "tool_result" ? block.output : undefined;
}

const catalogConfig = () => ({
  name: "c",
  description: "c",
  input: { type: "object" as const, properties: {} },
  handler: () => "ok",
});

describe("tool admission: unknown and invalid calls are observations, never authorization questions", () => {
  it("an unknown tool is TOOL_NOT_FOUND, reaches no policy, and the model recovers next step", async () => {
    const spy = spyPolicy();
    const h = harness({
      tools: [echoTool],
      permissions: spy.controller,
      script: [scriptedToolCall({ id: "c1", name: "nope" }), scriptedText("sorry")],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(log(outcome)[2]?.blocks).toEqual([
      {
        type: "tool_result",
        callId: "c1",
        name: "nope",
        output: 'unknown tool "nope"',
        isError: true,
        code: "TOOL_NOT_FOUND",
      },
    ]);
    expect(spy.asked).toEqual([]);
    expect(h.trail("policy")).toEqual([]);
    expect(result.reply).toEqual([{ type: "text", text: "sorry" }]);
    expect(result.toolCalls).toEqual([{ id: "c1", name: "nope", input: {}, isError: true }]);
  });

  it("a registered tool outside the turn's grant is TOOL_NOT_FOUND", async () => {
    let ran = false;
    const secret = tool("secret", () => {
      ran = true;
      return "x";
    });
    const h = harness({
      tools: [echoTool, secret],
      script: [scriptedToolCall({ id: "c1", name: "secret" }), scriptedText("ok")],
    });
    const outcome = await h.run({ grant: ["echo"] });
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_NOT_FOUND", isError: true });
    expect(ran).toBe(false);
    expect(h.model.requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
  });

  it("input that fails the schema is TOOL_BAD_INPUT and reaches no policy", async () => {
    const spy = spyPolicy();
    const h = harness({
      tools: [echoTool],
      permissions: spy.controller,
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: 3 } }),
        scriptedText("ok"),
      ],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_BAD_INPUT", isError: true });
    expect(String(outputOf(log(outcome), 2))).toContain("invalid input");
    expect(spy.asked).toEqual([]);
  });

  it("arguments that do not parse are TOOL_BAD_INPUT, listed with an empty input", async () => {
    const spy = spyPolicy();
    const h = harness({
      tools: [echoTool],
      permissions: spy.controller,
      script: [
        scriptedToolCall({ id: "c1", name: "echo", rawArguments: '{"text": "unterminated' }),
        scriptedText("ok"),
      ],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({
      code: "TOOL_BAD_INPUT",
      output: "the arguments are not a JSON object",
    });
    expect(log(outcome)[1]?.blocks[0]).toEqual({
      type: "tool_call",
      id: "c1",
      name: "echo",
      input: {},
    });
    expect(result.toolCalls[0]).toEqual({ id: "c1", name: "echo", input: {}, isError: true });
    expect(spy.asked).toEqual([]);
  });

  it("arguments that parse to an array are TOOL_BAD_INPUT", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", rawArguments: "[1]" }),
        scriptedText("ok"),
      ],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_BAD_INPUT" });
  });

  it("every intent is on the lifecycle trail, admitted or not", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall([
          { id: "c1", name: "nope" },
          { id: "c2", name: "echo", input: { text: "x" } },
        ]),
        scriptedText("ok"),
      ],
    });
    await h.run();
    const life = h
      .trail("lifecycle")
      .filter((e) => e.action === "tool.call" || e.action === "tool.result");
    expect(life.map((e) => `${e.action}:${e.callId}:${e.detail}`)).toEqual([
      "tool.call:c1:unregistered",
      "tool.call:c2:echo",
      "tool.result:c1:TOOL_NOT_FOUND",
      "tool.result:c2:ok",
    ]);
  });
});

describe("tool results: expected failures, thrown handlers, domain objects", () => {
  it("toolError(payload) is a result with isError, tool:post sees the flag, the turn continues", async () => {
    const posts: boolean[] = [];
    const find = tool("find", () => toolError({ message: "not found" }));
    const h = harness({
      tools: [find],
      hooks: { "tool:post": (i) => void posts.push(i.isError) },
      script: [scriptedToolCall({ id: "c1", name: "find" }), scriptedText("none")],
    });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(log(outcome)[2]?.blocks[0]).toEqual({
      type: "tool_result",
      callId: "c1",
      name: "find",
      output: { message: "not found" },
      isError: true,
    });
    expect(posts).toEqual([true]);
    expect(result.terminalReason).toBe("answered");
  });

  it("a domain object with an isError field stays ordinary output", async () => {
    const find = tool("find", () => ({ isError: true, payload: "looks like an error" }));
    const h = harness({
      tools: [find],
      script: [scriptedToolCall({ id: "c1", name: "find" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toEqual({
      type: "tool_result",
      callId: "c1",
      name: "find",
      output: { isError: true, payload: "looks like an error" },
      isError: false,
    });
  });

  it("a thrown handler makes the turn uncertain and nothing else runs", async () => {
    const boom = tool("boom", () => {
      throw new Error("db down");
    });
    const h = harness({
      tools: [boom],
      script: [scriptedToolCall({ id: "c1", name: "boom" }), scriptedText("never")],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("tool:boom");
    expect(h.model.calls).toBe(1);
    expect(h.model.pending).toBe(1);
    // the log never holds a dangling call
    expect(log(outcome)[2]?.blocks).toEqual([
      {
        type: "tool_result",
        callId: "c1",
        name: "boom",
        output: "not completed: the turn stopped before this call finished",
        isError: true,
        code: "TOOL_INTERRUPTED",
      },
    ]);
  });

  it("a toolError payload that is not JSON data is TOOL_BAD_OUTPUT", async () => {
    const odd = tool("odd", () => toolError(new Map() as never));
    const h = harness({
      tools: [odd],
      script: [scriptedToolCall({ id: "c1", name: "odd" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({ code: "TOOL_BAD_OUTPUT", isError: true });
  });

  it("output that is not JSON data is TOOL_BAD_OUTPUT; undefined is null", async () => {
    const fn = tool("fn", () => () => 1);
    const none = tool("none", () => undefined);
    const h = harness({
      tools: [fn, none],
      script: [
        scriptedToolCall([
          { id: "c1", name: "fn" },
          { id: "c2", name: "none" },
        ]),
        scriptedText("ok"),
      ],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks).toEqual([
      {
        type: "tool_result",
        callId: "c1",
        name: "fn",
        output: "the tool returned something that is not JSON data",
        isError: true,
        code: "TOOL_BAD_OUTPUT",
      },
      { type: "tool_result", callId: "c2", name: "none", output: null, isError: false },
    ]);
  });

  it("a handler receives a frozen snapshot of its input and the host's facts", async () => {
    let seen: { frozen: boolean; facts: unknown; factsFrozen: boolean } | undefined;
    const look = tool("look", (input, ctx) => {
      seen = {
        frozen: Object.isFrozen(input),
        facts: ctx.facts,
        factsFrozen: Object.isFrozen(ctx.facts),
      };
      return "ok";
    });
    const facts = { clinic: "c-1" };
    const h = harness({
      tools: [look],
      script: [
        scriptedToolCall({ id: "c1", name: "look", input: { a: { b: 1 } } }),
        scriptedText("ok"),
      ],
    });
    await h.run({ facts });
    expect(seen).toEqual({ frozen: true, facts: { clinic: "c-1" }, factsFrozen: true });
    expect(Object.isFrozen(facts)).toBe(false);
  });
});

describe("output bound: cut with a marker at maxOutputChars, never sent whole", () => {
  const sized = (n: number) =>
    defineTool({
      name: "big",
      description: "Big output.",
      input: { type: "object" },
      maxOutputChars: 10,
      handler: () => "x".repeat(n),
    });

  it("exactly at the limit is sent whole", async () => {
    const h = harness({
      tools: [sized(10)],
      script: [scriptedToolCall({ id: "c1", name: "big" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(outputOf(log(outcome), 2)).toBe("x".repeat(10));
  });

  it("one character over is cut, with the marker", async () => {
    const h = harness({
      tools: [sized(11)],
      script: [scriptedToolCall({ id: "c1", name: "big" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(outputOf(log(outcome), 2)).toBe(
      `${"x".repeat(10)}\n[output truncated: 1 of 11 characters cut]`,
    );
  });

  it("JSON output is measured as the model reads it", async () => {
    const json = defineTool({
      name: "big",
      description: "Big output.",
      input: { type: "object" },
      maxOutputChars: 10,
      handler: () => ({ k: "123456" }),
    });
    const h = harness({
      tools: [json],
      script: [scriptedToolCall({ id: "c1", name: "big" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    // {"k":"123456"} is 14 characters
    expect(outputOf(log(outcome), 2)).toBe(
      '{"k":"1234\n[output truncated: 4 of 14 characters cut]',
    );
  });
});

describe("multi-step tool turns", () => {
  it("runs several steps, each request consuming the previous results", async () => {
    const h = harness({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "a" } }),
        scriptedToolCall({ id: "c2", name: "echo", input: { text: "b" } }),
        scriptedText("ab"),
      ],
    });
    const result = completed(await h.run());
    expect(result.toolCalls.map((c) => c.id)).toEqual(["c1", "c2"]);
    expect(h.model.requests.map((r) => r.messages.length)).toEqual([1, 3, 5]);
    expect(h.model.requests.every((r) => r.tools.map((t) => t.name).join() === "echo")).toBe(true);
    expect(result.receipts).toHaveLength(3);
    expect(result.costMicros).toBe(3 * 105);
  });

  it("a declared access lands on the access trail before the handler runs", async () => {
    const order: string[] = [];
    const read = defineTool({
      name: "read_record",
      description: "Reads a record.",
      input: { type: "object", properties: { id: { type: "string" } } },
      access: (input) => ({ resource: `patients/${String(input.id)}` }),
      handler: () => {
        order.push("handler");
        return "ok";
      },
    });
    const h = harness({
      tools: [read],
      sink: (e) => void (e.type === "tool.result" && order.push("result")),
      script: [
        scriptedToolCall({ id: "c1", name: "read_record", input: { id: "7" } }),
        scriptedText("ok"),
      ],
    });
    await h.run();
    expect(
      h
        .trail("access")
        .map((e) => ({ tool: e.tool, resource: e.resource, action: e.action, callId: e.callId })),
    ).toEqual([
      { tool: "read_record", resource: hashed("patients/7"), action: "read", callId: "c1" },
    ]);
    expect(order).toEqual(["handler", "result"]);
  });

  it("a tool that declares nonSensitiveTrail keeps an identifier-shaped resource and subject as they are, and hashes one that is not", async () => {
    const catalog = defineTool({
      name: "read_catalog",
      description: "Reads a catalog entry.",
      input: { type: "object", properties: { id: { type: "string" } } },
      nonSensitiveTrail: true,
      authorize: (input) => ({ action: "read", subject: `catalog/${String(input.id)}` }),
      access: (input) => ({ resource: `catalog/${String(input.id)}` }),
      handler: () => "ok",
    });
    const h = harness({
      tools: [catalog],
      script: [
        scriptedToolCall([
          { id: "c1", name: "read_catalog", input: { id: "A-12" } },
          { id: "c2", name: "read_catalog", input: { id: "free text" } },
        ]),
        scriptedText("ok"),
      ],
    });
    await h.run();
    expect(h.trail("access").map((e) => e.resource)).toEqual([
      "catalog/A-12",
      hashed("catalog/free text"),
    ]);
    expect(
      h
        .trail("policy")
        .filter((e) => e.action === "intent")
        .map((e) => e.authorization?.subject),
    ).toEqual(["catalog/A-12", hashed("catalog/free text")]);
    expect(() =>
      defineTool({ ...catalogConfig(), nonSensitiveTrail: "yes" as unknown as boolean }),
    ).toThrow(/nonSensitiveTrail must be a boolean/);
  });

  it("tool:pre may deny a call (an error observation), the handler never runs", async () => {
    let ran = false;
    const t = tool("t", () => {
      ran = true;
      return 1;
    });
    const h = harness({
      tools: [t],
      hooks: { "tool:pre": () => ({ deny: "not today" }) },
      script: [scriptedToolCall({ id: "c1", name: "t" }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(log(outcome)[2]?.blocks[0]).toMatchObject({
      code: "TOOL_DENIED",
      output: "denied: not today",
    });
    expect(ran).toBe(false);
  });
});
