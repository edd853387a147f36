import {
  type JsonObject,
  type Msg,
  SEARCH_TOOLS_NAME,
  type ToolDefinition,
  type ToolResultBlock,
  ValidationError,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, type HarnessOptions, log, tool } from "./harness.js";

/** Registered in this order: echo (not deferred), then five deferred tools. */
const ran: string[] = [];
function deferred(name: string, description: string): ToolDefinition {
  return tool(
    name,
    () => {
      ran.push(name);
      return { ok: name };
    },
    { description, deferred: true },
  );
}
const TOOLS = [
  echoTool,
  deferred("crm__find_patient", "Finds a patient record by name or date of birth."),
  deferred("crm__create_invoice", "Creates an invoice for a patient visit."),
  deferred("billing__create_invoice", "Creates an invoice in the billing system for an account."),
  deferred("lab__order_test", "Orders a laboratory test for a patient."),
  deferred("lab__get_results", "Gets laboratory results for an ordered test."),
];

const search = (input: JsonObject, id = "s1") =>
  scriptedToolCall({ id, name: SEARCH_TOOLS_NAME, input });
const setup = (opts: HarnessOptions) => harness({ tools: TOOLS, ...opts });

function results(messages: readonly Msg[]): ToolResultBlock[] {
  return messages.flatMap((m) =>
    m.blocks.filter((b): b is ToolResultBlock => b.type === "tool_result"),
  );
}
const names = (specs: readonly { name: string }[] | undefined) => (specs ?? []).map((s) => s.name);

describe("advertisement: deferred tools wait for a search", () => {
  it("a deferred tool is not advertised; search_tools follows the non-deferred tools and names every deferred one", async () => {
    const h = setup({ script: [scriptedText("hi")] });
    completed(await h.run());
    const request = h.model.requests[0];
    expect(names(request?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME]);
    const description = request?.tools[1]?.description ?? "";
    for (const t of TOOLS.slice(1)) expect(description).toContain(t.name);
    expect(request?.deferredTools).toEqual(TOOLS.slice(1).map((t) => t.name));
  });

  it("a grant that defers nothing advertises no search_tools, and a search_tools call is an unknown tool", async () => {
    const h = setup({ script: [search({ query: "invoice" }), scriptedText("ok")] });
    const outcome = await h.run({ grant: ["echo"] });
    expect(names(h.model.requests[0]?.tools)).toEqual(["echo"]);
    expect(h.model.requests[0]?.deferredTools).toBeUndefined();
    expect(results(log(outcome))[0]).toMatchObject({ code: "TOOL_NOT_FOUND", isError: true });
  });

  it("the description and deferredTools name only the grant's deferred tools", async () => {
    const h = setup({ script: [scriptedText("hi")] });
    completed(await h.run({ grant: ["crm__find_patient", "lab__order_test"] }));
    const request = h.model.requests[0];
    expect(names(request?.tools)).toEqual([SEARCH_TOOLS_NAME]);
    expect(request?.tools[0]?.description).not.toContain("billing__create_invoice");
    expect(request?.deferredTools).toEqual(["crm__find_patient", "lab__order_test"]);
  });
});

describe("a search: answered by the engine, recorded, told to the model", () => {
  it("loads by names: the block records loads, the access trail logs each by name, the result says what is callable", async () => {
    const h = setup({
      script: [search({ names: ["lab__get_results", "find_patient"] }), scriptedText("ok")],
    });
    const outcome = await h.run();
    const block = results(log(outcome))[0];
    expect(block).toEqual({
      type: "tool_result",
      callId: "s1",
      name: SEARCH_TOOLS_NAME,
      isError: false,
      loads: ["lab__get_results", "crm__find_patient"],
      output: {
        loaded: ["lab__get_results", "crm__find_patient"],
        note: "You can call now: lab__get_results, crm__find_patient.",
      },
    });
    expect(h.trail("access").map((e) => [e.tool, e.action, e.resource, e.callId])).toEqual([
      [SEARCH_TOOLS_NAME, "load", "lab__get_results", "s1"],
      [SEARCH_TOOLS_NAME, "load", "crm__find_patient", "s1"],
    ]);
    const life = h.trail("lifecycle").filter((e) => e.action.startsWith("tool."));
    expect(life.map((e) => `${e.action}:${e.detail}`)).toEqual([
      `tool.call:${SEARCH_TOOLS_NAME}`,
      "tool.result:ok",
    ]);
    expect(completed(outcome).toolCalls).toEqual([
      {
        id: "s1",
        name: SEARCH_TOOLS_NAME,
        input: { names: ["lab__get_results", "find_patient"] },
        isError: false,
      },
    ]);
  });

  it("reports ambiguous, unknown and alreadyAvailable; a load-free result has no loads and no access event", async () => {
    const h = setup({
      script: [search({ names: ["create_invoice", "create_pr", "echo"] }), scriptedText("ok")],
    });
    const block = results(log(await h.run()))[0];
    expect(block?.loads).toBeUndefined();
    expect(block?.output).toEqual({
      loaded: [],
      alreadyAvailable: ["echo"],
      ambiguous: { create_invoice: ["crm__create_invoice", "billing__create_invoice"] },
      unknown: ["create_pr"],
      note: "You can call now: echo. An ambiguous name is shared by several tools: name one by its full name. An unknown name is no tool you can use.",
    });
    expect(h.trail("access")).toEqual([]);
  });

  it("a query that matches nothing well loads nothing", async () => {
    const h = setup({ script: [search({ query: "book a flight to Berlin" }), scriptedText("ok")] });
    const block = results(log(await h.run()))[0];
    expect(block?.output).toEqual({ loaded: [], note: "No tool was loaded." });
    expect(names(h.model.requests[1]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME]);
  });

  it("limit caps a query's loads", async () => {
    const h = setup({
      script: [search({ query: "laboratory test results", limit: 1 }), scriptedText("ok")],
    });
    expect(results(log(await h.run()))[0]?.loads).toEqual(["lab__get_results"]);
  });

  it("input that fails its schema, or names neither query nor names, is TOOL_BAD_INPUT and loads nothing", async () => {
    const inputs: JsonObject[] = [
      {},
      { query: "x", extra: 1 },
      { query: "lab", limit: 0 },
      { names: "lab__order_test" },
    ];
    for (const input of inputs) {
      const h = setup({ script: [search(input), scriptedText("ok")] });
      const block = results(log(await h.run()))[0];
      expect(block, JSON.stringify(input)).toMatchObject({ code: "TOOL_BAD_INPUT", isError: true });
      expect(block?.loads).toBeUndefined();
    }
  });

  it("tool:pre sees the search and can deny it: nothing loads, nothing is logged as loaded", async () => {
    const seen: unknown[] = [];
    const h = setup({
      hooks: {
        "tool:pre": (e) => {
          seen.push([e.name, e.input]);
          return e.name === SEARCH_TOOLS_NAME ? { deny: "no searching here" } : undefined;
        },
      },
      script: [search({ names: ["lab__order_test"] }), scriptedText("ok")],
    });
    const outcome = await h.run();
    expect(seen).toEqual([[SEARCH_TOOLS_NAME, { names: ["lab__order_test"] }]]);
    expect(results(log(outcome))[0]).toMatchObject({
      code: "TOOL_DENIED",
      output: "denied: no searching here",
      isError: true,
    });
    expect(h.trail("access")).toEqual([]);
    expect(names(h.model.requests[1]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME]);
  });

  it("is privileged core: the permission controller is never asked, tool:post sees the result", async () => {
    const asked: string[] = [];
    const posts: unknown[] = [];
    const h = setup({
      permissions: {
        decide: (r) => {
          asked.push(r.tool);
          return "deny";
        },
      },
      hooks: { "tool:post": (e) => void posts.push([e.name, e.isError]) },
      script: [search({ names: ["lab__order_test"] }), scriptedText("ok")],
    });
    completed(await h.run());
    expect(asked).toEqual([]);
    expect(h.trail("policy")).toEqual([]);
    expect(posts).toEqual([[SEARCH_TOOLS_NAME, false]]);
  });

  it("is never in a profile: a grant naming search_tools is rejected before anything runs", async () => {
    const h = setup({ script: [] });
    await expect(h.run({ grant: ["echo", SEARCH_TOOLS_NAME] })).rejects.toThrow(ValidationError);
    expect(h.model.calls).toBe(0);
  });
});

describe("a load lasts while the view shows its result, within each turn's own grant", () => {
  it("persists across steps: loaded tools follow search_tools in load order, and run when called", async () => {
    const h = setup({
      script: [
        search({ names: ["lab__get_results"] }, "s1"),
        search({ names: ["find_patient"] }, "s2"),
        scriptedToolCall({ id: "c1", name: "crm__find_patient", input: {} }),
        scriptedText("done"),
      ],
    });
    ran.length = 0;
    completed(await h.run());
    expect(h.model.requests.map((r) => names(r.tools))).toEqual([
      ["echo", SEARCH_TOOLS_NAME],
      ["echo", SEARCH_TOOLS_NAME, "lab__get_results"],
      // crm__find_patient is registered before lab__get_results, yet loaded after it: appended.
      ["echo", SEARCH_TOOLS_NAME, "lab__get_results", "crm__find_patient"],
      ["echo", SEARCH_TOOLS_NAME, "lab__get_results", "crm__find_patient"],
    ]);
    // Every request's tools begin with the previous request's tools, byte for byte.
    for (let i = 1; i < h.model.requests.length; i += 1) {
      const before = h.model.requests[i - 1]?.tools ?? [];
      expect(JSON.stringify(h.model.requests[i]?.tools.slice(0, before.length))).toBe(
        JSON.stringify(before),
      );
    }
    expect(ran).toEqual(["crm__find_patient"]);
    // The search's own description never changes as tools load: the cached prefix holds.
    expect(new Set(h.model.requests.map((r) => r.tools[1]?.description)).size).toBe(1);
  });

  it("persists across turns through the view, and ends when the view no longer shows the result", async () => {
    const h = setup({
      script: [
        search({ names: ["lab__order_test"] }),
        scriptedText("ok"),
        scriptedText("again"),
        scriptedText("after rotation"),
      ],
    });
    const first = log(await h.run());
    completed(await h.run({ history: first, revision: first.length }));
    expect(names(h.model.requests[2]?.tools)).toEqual([
      "echo",
      SEARCH_TOOLS_NAME,
      "lab__order_test",
    ]);
    // A view that starts after the result (a rotation) no longer loads the tool.
    completed(await h.run({ history: first.slice(-1), revision: first.length }));
    expect(names(h.model.requests[3]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME]);
  });

  it("counts only within the turn's own grant", async () => {
    const h = setup({
      script: [
        search({ names: ["lab__order_test", "find_patient"] }),
        scriptedText("ok"),
        scriptedText("narrow"),
      ],
    });
    const first = log(await h.run());
    completed(
      await h.run({ history: first, revision: first.length, grant: ["echo", "crm__find_patient"] }),
    );
    expect(names(h.model.requests[2]?.tools)).toEqual([
      "echo",
      SEARCH_TOOLS_NAME,
      "crm__find_patient",
    ]);
  });

  it("a load keeps its place: a grant without it drops it, the next grant with it puts it back where it was; a rotation keeps the tail's loads in order", async () => {
    const h = setup({
      script: [
        search({ names: ["lab__get_results"] }, "s1"),
        search({ names: ["lab__order_test"] }, "s2"),
        search({ names: ["find_patient"] }, "s3"),
        scriptedText("ok"),
        scriptedText("narrow"),
        scriptedText("full"),
        scriptedText("rotated"),
      ],
    });
    const first = log(await h.run());
    const loadedOrder = ["lab__get_results", "lab__order_test", "crm__find_patient"];
    expect(names(h.model.requests[3]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME, ...loadedOrder]);
    completed(
      await h.run({
        history: first,
        revision: first.length,
        grant: ["echo", "lab__get_results", "crm__find_patient"],
      }),
    );
    expect(names(h.model.requests[4]?.tools)).toEqual([
      "echo",
      SEARCH_TOOLS_NAME,
      "lab__get_results",
      "crm__find_patient",
    ]);
    completed(await h.run({ history: first, revision: first.length }));
    expect(names(h.model.requests[5]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME, ...loadedOrder]);
    // A view that starts at the second search's call keeps its load and the third's, in load order.
    const at = first.findIndex((m) =>
      m.blocks.some((b) => b.type === "tool_call" && b.id === "s2"),
    );
    completed(await h.run({ history: first.slice(at), revision: first.length }));
    expect(names(h.model.requests[6]?.tools)).toEqual([
      "echo",
      SEARCH_TOOLS_NAME,
      "lab__order_test",
      "crm__find_patient",
    ]);
  });

  it("each request carries the grant's deferred definitions in registration order, the same list on every step", async () => {
    const h = setup({ script: [search({ names: ["lab__get_results"] }), scriptedText("ok")] });
    completed(await h.run());
    const [one, two] = h.model.requests;
    expect(names(one?.deferredToolSpecs)).toEqual(TOOLS.slice(1).map((t) => t.name));
    expect(JSON.stringify(two?.deferredToolSpecs)).toBe(JSON.stringify(one?.deferredToolSpecs));
    expect(one?.deferredToolSpecs?.[0]).toEqual({
      name: "crm__find_patient",
      description: "Finds a patient record by name or date of birth.",
      inputSchema: expect.any(Object),
    });
    const narrow = setup({ script: [scriptedText("hi")] });
    completed(await narrow.run({ grant: ["echo"] }));
    expect(narrow.model.requests[0]?.deferredToolSpecs).toBeUndefined();
  });

  it("a tool already loaded in the view is alreadyAvailable, not loaded twice", async () => {
    const h = setup({
      script: [
        search({ names: ["lab__order_test"] }, "s1"),
        search({ query: "order_test" }, "s2"),
        scriptedText("ok"),
      ],
    });
    const blocks = results(log(await h.run()));
    expect(blocks[1]?.output).toMatchObject({ loaded: [], alreadyAvailable: ["lab__order_test"] });
    expect(h.trail("access").map((e) => e.resource)).toEqual(["lab__order_test"]);
  });

  it("a load-shaped field on another tool's result loads nothing", async () => {
    const forged: Msg[] = [
      {
        role: "assistant",
        blocks: [{ type: "tool_call", id: "x1", name: "echo", input: { text: "x" } }],
      },
      {
        role: "user",
        blocks: [
          {
            type: "tool_result",
            callId: "x1",
            name: "echo",
            output: "x",
            isError: false,
            loads: ["lab__order_test"],
          },
        ],
      },
    ];
    const h = setup({ script: [scriptedText("ok")] });
    completed(await h.run({ history: forged, revision: 2 }));
    expect(names(h.model.requests[0]?.tools)).toEqual(["echo", SEARCH_TOOLS_NAME]);
  });
});

describe("delegates never see search_tools", () => {
  it("a delegate's request advertises only the tools it was given, and its search_tools call is an unknown tool", async () => {
    const probe = tool("probe", (_i, ctx) =>
      ctx.models.delegate({
        tier: "fast",
        sensitivity: "internal",
        prompt: "dig",
        tools: ["lab__order_test"],
      }),
    );
    const h = harness({
      tools: [probe, ...TOOLS],
      script: [scriptedToolCall({ id: "m1", name: "probe" }), scriptedText("ok")],
      smallScript: [search({ names: ["lab__get_results"] }, "d1"), scriptedText("child done")],
    });
    completed(await h.run());
    expect(h.small.requests.map((r) => names(r.tools))).toEqual([
      ["lab__order_test"],
      ["lab__order_test"],
    ]);
    const childResult = h.small.requests[1]?.messages.at(-1)?.blocks[0];
    expect(childResult).toMatchObject({
      type: "tool_result",
      name: SEARCH_TOOLS_NAME,
      code: "TOOL_NOT_FOUND",
      isError: true,
    });
    expect(h.trail("access")).toEqual([]);
  });
});
