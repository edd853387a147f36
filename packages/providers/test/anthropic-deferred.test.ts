import {
  type ModelRequest,
  type Msg,
  SEARCH_TOOLS_NAME,
  type ToolSpec,
  ValidationError,
} from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { type AnthropicClientOptions, createAnthropicClient } from "../src/index.js";
import { baseRequest, collect } from "./helpers/collect.js";
import { ANTHROPIC_TEXT as TEXT } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Native deferred loading on Anthropic (issue 16, item 3). The wire shape is built from the
 * tool-search-tool documentation (platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool:
 * "Deferred tool loading", "Custom tool search implementation", "Error handling", "Prompt
 * caching"); no recorded exchange of a client-side search with `tool_reference` blocks exists.
 */
const server = serverPerTest();

async function sent(
  request: ModelRequest,
  options: Partial<AnthropicClientOptions> = {},
): Promise<{ tools?: Record<string, unknown>[]; messages: { content: unknown }[] }> {
  server.enqueue({ body: TEXT });
  await collect(
    createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1`, ...options }),
    request,
  );
  return server.requests.at(-1)?.body as never;
}

const spec = (name: string): ToolSpec => ({
  name,
  description: `${name} tool`,
  inputSchema: { type: "object" },
});
const search = spec(SEARCH_TOOLS_NAME);
const [echo, a, b, c] = ["echo", "crm__a", "lab__b", "lab__c"].map(spec) as [
  ToolSpec,
  ToolSpec,
  ToolSpec,
  ToolSpec,
];
const deferred = { deferredTools: [a.name, b.name, c.name], deferredToolSpecs: [a, b, c] };

/** A view where a search loaded `lab__b`, then (not deferred any more) `echo` was named in loads. */
const messages: Msg[] = [
  { role: "user", blocks: [{ type: "text", text: "find b" }] },
  {
    role: "assistant",
    blocks: [
      { type: "tool_call", id: "t1", name: SEARCH_TOOLS_NAME, input: { names: ["lab__b"] } },
    ],
  },
  {
    role: "user",
    blocks: [
      {
        type: "tool_result",
        callId: "t1",
        name: SEARCH_TOOLS_NAME,
        output: { loaded: ["lab__b"] },
        isError: false,
        loads: ["lab__b", "gone__x"],
      },
    ],
  },
  { role: "assistant", blocks: [{ type: "tool_call", id: "t2", name: "echo", input: {} }] },
  {
    role: "user",
    blocks: [
      {
        type: "tool_result",
        callId: "t2",
        name: "echo",
        output: "ok",
        isError: false,
        loads: ["lab__c"],
      },
    ],
  },
];

describe("Anthropic native deferred loading", () => {
  it("sends every deferred definition with defer_loading after the advertised tools, whatever is loaded", async () => {
    const loaded = await sent(
      baseRequest("claude-sonnet-4-5", { tools: [echo, search, b], messages, ...deferred }),
    );
    const none = await sent(
      baseRequest("claude-sonnet-4-5", { tools: [echo, search], ...deferred }),
    );
    expect(loaded.tools?.map((t) => [t.name, t.defer_loading ?? false])).toEqual([
      ["echo", false],
      [SEARCH_TOOLS_NAME, false],
      ["crm__a", true],
      ["lab__b", true],
      ["lab__c", true],
    ]);
    expect(JSON.stringify(loaded.tools)).toBe(JSON.stringify(none.tools));
  });

  it("answers a search with tool_reference blocks after its text, only for tools the request defers, only on search_tools results", async () => {
    const body = await sent(
      baseRequest("claude-sonnet-4-5", { tools: [echo, search, b], messages, ...deferred }),
    );
    expect(body.messages[2]?.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "t1",
        is_error: false,
        content: [
          { type: "text", text: '{"loaded":["lab__b"]}' },
          { type: "tool_reference", tool_name: "lab__b" },
        ],
      },
    ]);
    // `loads` on another tool's result is not a load.
    expect(body.messages[4]?.content).toEqual([
      { type: "tool_result", tool_use_id: "t2", is_error: false, content: "ok" },
    ]);
  });

  it("never puts the prefix marker on a deferred tool: the last non-deferred tool carries it without a system prompt", async () => {
    const body = await sent(
      baseRequest("claude-sonnet-4-5", {
        tools: [echo, search],
        ...deferred,
        cache: { ttl: "1h", conversationTail: false },
      }),
    );
    expect(body.tools?.map((t) => (t.cache_control ? t.name : null)).filter(Boolean)).toEqual([
      SEARCH_TOOLS_NAME,
    ]);
  });

  it("appends instead on a model without tool search, with deferredLoading append, and when every tool would be deferred", async () => {
    const old = await sent(
      baseRequest("claude-opus-4-1", { tools: [echo, search, b], messages, ...deferred }),
    );
    const append = await sent(
      baseRequest("claude-sonnet-4-5", { tools: [echo, search, b], messages, ...deferred }),
      { deferredLoading: "append" },
    );
    const onlyDeferred = await sent(
      baseRequest("claude-sonnet-4-5", { tools: [b], messages, ...deferred }),
    );
    for (const body of [old, append]) {
      expect(body.tools?.map((t) => t.name)).toEqual(["echo", SEARCH_TOOLS_NAME, "lab__b"]);
      expect(JSON.stringify(body)).not.toContain("tool_reference");
      expect(JSON.stringify(body)).not.toContain("defer_loading");
    }
    expect(onlyDeferred.tools?.map((t) => t.name)).toEqual(["lab__b"]);
    expect(JSON.stringify(onlyDeferred)).not.toContain("defer_loading");
    // A host override turns it on for a model the defaults do not know.
    const custom = await sent(baseRequest("my-claude", { tools: [echo, search], ...deferred }), {
      models: () => ({ toolSearch: true }),
    });
    expect(custom.tools?.filter((t) => t.defer_loading === true)).toHaveLength(3);
  });

  it("refuses before any byte a deferred definition with a bad or repeated name", async () => {
    const anthropic = createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    for (const specs of [[a, a], [spec("bad name")], [spec("x".repeat(65))]]) {
      expect(() =>
        anthropic.validate(
          baseRequest("claude-sonnet-4-5", {
            tools: [search],
            deferredTools: specs.map((t) => t.name),
            deferredToolSpecs: specs,
          }),
        ),
      ).toThrow(/deferred tool/);
    }
    expect(() =>
      anthropic.validate(
        baseRequest("claude-sonnet-4-5", {
          tools: [search],
          deferredTools: ["x".repeat(64)],
          deferredToolSpecs: [spec("x".repeat(64))],
        }),
      ),
    ).not.toThrow();
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a deferredLoading outside its vocabulary", () => {
    expect(() => createAnthropicClient({ deferredLoading: "lazy" as never })).toThrow(
      ValidationError,
    );
  });
});
