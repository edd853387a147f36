import {
  type ModelRequest,
  type Msg,
  SEARCH_TOOLS_NAME,
  type ToolSpec,
  ValidationError,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createOpenAIResponsesClient, type OpenAIResponsesClientOptions } from "../src/index.js";
import { supportsToolSearch } from "../src/openai-responses/tool-search.js";
import { baseRequest, collect, terminal } from "./helpers/collect.js";
import { toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Native deferred loading on the OpenAI Responses API (issue 16, item 3): OpenAI's tool search with
 * client execution. The wire shape is built from the documentation
 * (developers.openai.com/api/docs/guides/tools-tool-search: `tool_search` in `tools`, functions
 * marked `defer_loading: true`, gpt-5.4 and later; client execution answered by
 * `tool_search_output` items); no recorded exchange exists.
 */
const server = serverPerTest();

function sse(events: readonly object[]): string {
  const usage = {
    input_tokens: 100,
    output_tokens: 5,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  };
  const all = [
    { type: "response.created", response: { id: "resp_1", status: "in_progress" } },
    ...events,
    { type: "response.completed", response: { id: "resp_1", status: "completed", usage } },
  ];
  return toSse(
    all.map((e) => JSON.stringify(e)),
    { named: true },
  );
}
const TEXT = sse([
  {
    type: "response.output_text.delta",
    item_id: "msg_1",
    output_index: 0,
    content_index: 0,
    delta: "ok",
  },
]);

type Body = { tools?: Record<string, unknown>[]; input: Record<string, unknown>[] };
async function sent(
  request: ModelRequest,
  options: Partial<OpenAIResponsesClientOptions> = {},
): Promise<Body> {
  server.enqueue({ body: TEXT });
  await collect(
    createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1`, ...options }),
    request,
  );
  return server.requests.at(-1)?.body as never;
}

const spec = (name: string): ToolSpec => ({
  name,
  description: `${name} tool`,
  inputSchema: { type: "object", properties: { q: { type: "string" } } },
});
const search = spec(SEARCH_TOOLS_NAME);
const [echo, a, b, c] = ["echo", "crm__a", "lab__b", "lab__c"].map(spec) as [
  ToolSpec,
  ToolSpec,
  ToolSpec,
  ToolSpec,
];
const deferred = { deferredTools: [a.name, b.name, c.name], deferredToolSpecs: [a, b, c] };

/** A view where a search loaded `lab__b`, then `echo` ran (its `loads` is not a load). */
const messages: Msg[] = [
  { role: "user", blocks: [{ type: "text", text: "find b" }] },
  {
    role: "assistant",
    blocks: [
      { type: "tool_call", id: "call_1", name: SEARCH_TOOLS_NAME, input: { names: ["lab__b"] } },
    ],
  },
  {
    role: "user",
    blocks: [
      {
        type: "tool_result",
        callId: "call_1",
        name: SEARCH_TOOLS_NAME,
        output: { loaded: ["lab__b"] },
        isError: false,
        loads: ["lab__b", "gone__x"],
      },
    ],
  },
  { role: "assistant", blocks: [{ type: "tool_call", id: "call_2", name: "echo", input: {} }] },
  {
    role: "user",
    blocks: [
      {
        type: "tool_result",
        callId: "call_2",
        name: "echo",
        output: "ok",
        isError: false,
        loads: ["lab__c"],
      },
    ],
  },
];

describe("OpenAI Responses native deferred loading (tool search, client execution)", () => {
  it("gpt-5.4 and later have tool search; earlier models and other families do not", () => {
    expect(
      ["gpt-5.4", "gpt-5.4-mini", "gpt-5.5-2026-03-01", "gpt-6", "gpt-10.1"].map(
        supportsToolSearch,
      ),
    ).toEqual([true, true, true, true, true]);
    expect(
      ["gpt-5.3", "gpt-5", "gpt-5-mini", "gpt-4.1", "o3", "my-gpt-5.4"].map(supportsToolSearch),
    ).toEqual([false, false, false, false, false, false]);
  });

  it("advertises search_tools as the client-executed tool_search and every deferred definition with defer_loading; the array is the same whatever is loaded", async () => {
    const loaded = await sent(
      baseRequest("gpt-5.4", { tools: [echo, search, b], messages, ...deferred }),
    );
    const none = await sent(baseRequest("gpt-5.4", { tools: [echo, search], ...deferred }));
    expect(loaded.tools?.map((t) => [t.type, t.name ?? null, t.defer_loading ?? false])).toEqual([
      ["function", "echo", false],
      ["tool_search", null, false],
      ["function", "crm__a", true],
      ["function", "lab__b", true],
      ["function", "lab__c", true],
    ]);
    expect(loaded.tools?.[1]).toEqual({
      type: "tool_search",
      execution: "client",
      description: search.description,
      parameters: search.inputSchema,
    });
    expect(JSON.stringify(loaded.tools)).toBe(JSON.stringify(none.tools));
  });

  it("replays a search as tool_search_call and tool_search_output with the deferred definitions it loaded, its text after; other calls stay functions", async () => {
    const body = await sent(
      baseRequest("gpt-5.4", { tools: [echo, search, b], messages, ...deferred }),
    );
    expect(body.input[1]).toEqual({
      type: "tool_search_call",
      call_id: "call_1",
      execution: "client",
      status: "completed",
      arguments: { names: ["lab__b"] },
    });
    expect(body.input[2]).toEqual({
      type: "tool_search_output",
      call_id: "call_1",
      execution: "client",
      status: "completed",
      tools: [
        {
          type: "function",
          name: "lab__b",
          description: b.description,
          parameters: b.inputSchema,
          strict: false,
          defer_loading: true,
        },
      ],
    });
    expect(body.input[3]).toEqual({
      role: "user",
      content: [{ type: "input_text", text: '{"loaded":["lab__b"]}' }],
    });
    expect(body.input[4]).toEqual({
      type: "function_call",
      call_id: "call_2",
      name: "echo",
      arguments: "{}",
    });
    expect(body.input[5]).toEqual({
      type: "function_call_output",
      call_id: "call_2",
      output: "ok",
    });
  });

  it("appends instead on a model without tool search, with deferredLoading append, and without search_tools advertised", async () => {
    const old = await sent(
      baseRequest("gpt-5", { tools: [echo, search, b], messages, ...deferred }),
    );
    const append = await sent(
      baseRequest("gpt-5.4", { tools: [echo, search, b], messages, ...deferred }),
      { deferredLoading: "append" },
    );
    const unsearched = await sent(
      baseRequest("gpt-5.4", { tools: [echo, b], messages, ...deferred }),
    );
    for (const body of [old, append, unsearched]) {
      expect(JSON.stringify(body)).not.toContain("tool_search");
      expect(JSON.stringify(body)).not.toContain("defer_loading");
    }
    expect(old.tools?.map((t) => t.name)).toEqual(["echo", SEARCH_TOOLS_NAME, "lab__b"]);
    expect(old.input[1]).toEqual({
      type: "function_call",
      call_id: "call_1",
      name: SEARCH_TOOLS_NAME,
      arguments: '{"names":["lab__b"]}',
    });
  });

  it("reads a client-executed tool_search_call as a search_tools call (arguments as an object or a string); a hosted one is not a call", async () => {
    const call = (item: object) =>
      sse([{ type: "response.output_item.done", output_index: 0, item }]);
    server.enqueue(
      {
        body: call({
          type: "tool_search_call",
          id: "tsc_1",
          call_id: "call_9",
          execution: "client",
          status: "completed",
          arguments: { query: "lab results" },
        }),
      },
      {
        body: call({
          type: "tool_search_call",
          id: "tsc_2",
          call_id: "call_8",
          execution: "client",
          status: "completed",
          arguments: '{"names":["lab__c"]}',
        }),
      },
      {
        body: call({
          type: "tool_search_call",
          id: "tsc_3",
          call_id: null,
          execution: "server",
          status: "completed",
          arguments: { paths: ["x"] },
        }),
      },
    );
    const client = createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    const request = baseRequest("gpt-5.4", { tools: [echo, search], ...deferred });
    expect(terminal(await collect(client, request))).toMatchObject({
      stopReason: "tool_use",
      toolCalls: [{ id: "call_9", name: SEARCH_TOOLS_NAME, arguments: '{"query":"lab results"}' }],
    });
    expect(terminal(await collect(client, request))).toMatchObject({
      toolCalls: [{ id: "call_8", name: SEARCH_TOOLS_NAME, arguments: '{"names":["lab__c"]}' }],
    });
    expect(terminal(await collect(client, request))).toMatchObject({ toolCalls: [] });
  });

  it("refuses an unknown deferredLoading with a typed error", () => {
    expect(() =>
      createOpenAIResponsesClient({ apiKey: "k", deferredLoading: "inline" as never }),
    ).toThrow(ValidationError);
  });
});
