import type { ModelRequest, Msg, ToolSpec } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createAnthropicClient } from "../src/index.js";
import { baseRequest, collect, userText } from "./helpers/collect.js";
import { ANTHROPIC_TEXT as TEXT, cassette } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const client = () => createAnthropicClient({ apiKey: "sk-ant-test", baseURL: `${server.url}/v1` });

async function sent(request: ModelRequest): Promise<Record<string, unknown>> {
  server.enqueue({ body: TEXT });
  await collect(client(), request);
  return server.requests.at(-1)?.body as Record<string, unknown>;
}

const weather: ToolSpec = {
  name: "get_weather",
  description: "Weather for a city",
  inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

describe("Anthropic request bodies", () => {
  it("sends a plain text request with headers pinned", async () => {
    const body = await sent(
      baseRequest("claude-haiku-4-5", {
        system: [{ type: "text", text: "Be brief." }],
        maxOutputTokens: 256,
      }),
    );
    expect(body).toEqual({
      model: "claude-haiku-4-5",
      max_tokens: 256,
      system: [{ type: "text", text: "Be brief." }],
      messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
      stream: true,
    });
    const captured = server.requests.at(-1);
    expect(captured?.path).toBe("/v1/messages");
    expect(captured?.headers["x-api-key"]).toBe("sk-ant-test");
    expect(captured?.headers["anthropic-version"]).toBe("2023-06-01");
    expect(captured?.headers["content-type"]).toBe("application/json");
  });

  it("renders labelled human/system text, keeps the harness suffix verbatim, drops empty text", async () => {
    const body = await sent(
      baseRequest("claude-haiku-4-5", {
        messages: [
          {
            role: "user",
            blocks: [
              { type: "text", text: "Your appointment moved.", origin: "human", label: "Dr. Ruiz" },
              { type: "text", text: "" },
              { type: "text", text: "It is Monday.", origin: "harness" },
            ],
          },
        ],
      }),
    );
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Dr. Ruiz: Your appointment moved." },
          { type: "text", text: "It is Monday." },
        ],
      },
    ]);
  });

  it("sends tools, tool choice, parallel calls and tool results with is_error, as recorded", async () => {
    const [, second] = cassette("anthropic/test_multiple_parallel_tool_calls.yaml");
    const recorded = second?.request.parsed_body as Record<string, unknown> & {
      system: string;
      messages: { content: { text?: string }[] }[];
    };
    const names = ["Alice", "Bob", "Charlie", "Daisy"];
    const ids = [
      "toolu_0167cfEnoQaPviGdVXA95zcu",
      "toolu_01EEe2V5HD1Ac4rKiUR4HD2T",
      "toolu_01XFyAjstT3966qvRynZyVPo",
      "toolu_013mnQZbgtK2oe3Mo3XKJsx3",
    ];
    const results = [
      "alice is bob's wife",
      "bob is alice's husband",
      "charlie is alice's son",
      "daisy is bob's daughter and charlie's younger sister",
    ];
    const messages: Msg[] = [
      userText(recorded.messages[0]?.content[0]?.text ?? ""),
      {
        role: "assistant",
        blocks: [
          { type: "text", text: recorded.messages[1]?.content[0]?.text ?? "" },
          ...names.map((name, i) => ({
            type: "tool_call" as const,
            id: ids[i] ?? "",
            name: "retrieve_entity_info",
            input: { name },
          })),
        ],
      },
      {
        role: "user",
        blocks: results.map((output, i) => ({
          type: "tool_result" as const,
          callId: ids[i] ?? "",
          name: "retrieve_entity_info",
          output,
          isError: false,
        })),
      },
    ];
    const body = await sent({
      model: "claude-haiku-4-5",
      system: [{ type: "text", text: recorded.system }],
      messages,
      tools: [
        {
          name: "retrieve_entity_info",
          description: "Get the knowledge about the given entity.",
          inputSchema: {
            additionalProperties: false,
            properties: { name: { type: "string" } },
            required: ["name"],
            type: "object",
          },
        },
      ],
      toolChoice: { type: "auto" },
      maxOutputTokens: 4096,
    });
    const { stream: _s, system: sys, ...rest } = body;
    const { stream: _r, system: recordedSystem, ...expected } = recorded;
    expect(rest).toEqual(expected);
    expect(sys).toEqual([{ type: "text", text: recordedSystem }]);
  });

  it("marks a failed tool result is_error and serializes JSON output", async () => {
    const body = await sent(
      baseRequest("claude-haiku-4-5", {
        tools: [weather],
        toolChoice: { type: "tool", name: "get_weather" },
        messages: [
          userText("Weather in Lyon?"),
          {
            role: "assistant",
            blocks: [
              { type: "tool_call", id: "toolu_1", name: "get_weather", input: { city: "Lyon" } },
            ],
          },
          {
            role: "user",
            blocks: [
              {
                type: "tool_result",
                callId: "toolu_1",
                name: "get_weather",
                output: { error: "upstream down" },
                isError: true,
                code: "TOOL_FAILED",
              },
            ],
          },
        ],
      }),
    );
    expect(body.tools).toEqual([
      { name: "get_weather", description: "Weather for a city", input_schema: weather.inputSchema },
    ]);
    expect(body.tool_choice).toEqual({ type: "tool", name: "get_weather" });
    expect((body.messages as unknown[])[2]).toEqual({
      role: "user",
      content: [
        {
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: '{"error":"upstream down"}',
          is_error: true,
        },
      ],
    });
  });

  it("replays thinking with its signature and redacted thinking, drops other providers' and models' reasoning", async () => {
    const body = await sent(
      baseRequest("claude-sonnet-4-5", {
        reasoning: "low",
        maxOutputTokens: 4096,
        messages: [
          userText("Compute."),
          {
            role: "assistant",
            blocks: [
              {
                type: "reasoning",
                text: "Let me think.",
                signature: "sig-1",
                provider: "anthropic",
                model: "claude-sonnet-4-5",
              },
              {
                type: "reasoning",
                text: "",
                redacted: "opaque-data",
                provider: "anthropic",
                model: "claude-sonnet-4-5",
              },
              {
                type: "reasoning",
                text: "foreign",
                signature: "[{}]",
                provider: "openrouter",
                model: "claude-sonnet-4-5",
              },
              {
                type: "reasoning",
                text: "other model",
                signature: "sig-opus",
                provider: "anthropic",
                model: "claude-opus-4-1",
              },
              { type: "reasoning", text: "", redacted: "unstamped-data" },
              {
                type: "reasoning",
                text: "no signature",
                provider: "anthropic",
                model: "claude-sonnet-4-5",
              },
              { type: "tool_call", id: "toolu_9", name: "calc", input: { x: 1 } },
            ],
          },
          {
            role: "user",
            blocks: [
              { type: "tool_result", callId: "toolu_9", name: "calc", output: "2", isError: false },
            ],
          },
        ],
        tools: [{ name: "calc", description: "Calculator", inputSchema: { type: "object" } }],
      }),
    );
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
    expect((body.messages as { content: unknown[] }[])[1]?.content).toEqual([
      { type: "thinking", thinking: "Let me think.", signature: "sig-1" },
      { type: "redacted_thinking", data: "opaque-data" },
      { type: "tool_use", id: "toolu_9", name: "calc", input: { x: 1 } },
    ]);
  });

  it("uses adaptive thinking with an effort on newer models, and the output schema beside it", async () => {
    const schema = {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
    };
    const body = await sent(
      baseRequest("claude-opus-5-5", { reasoning: "high", output: { name: "answer", schema } }),
    );
    expect(body.thinking).toEqual({ type: "adaptive" });
    expect(body.output_config).toEqual({ effort: "high", format: { type: "json_schema", schema } });
  });

  it("sends media by URL and by base64 (image, PDF, plain text document)", async () => {
    const pdf = Buffer.from("%PDF-1.4 test").toString("base64");
    const body = await sent(
      baseRequest("claude-haiku-4-5", {
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "image",
                ref: "https://example.com/cat.png",
                contentType: "image/png",
              },
              {
                type: "media",
                kind: "image",
                ref: "data:image/jpeg;base64,/9j/4AAQ",
                contentType: "image/jpeg",
                sizeBytes: 6,
              },
              {
                type: "media",
                kind: "document",
                ref: "https://example.com/report.pdf",
                contentType: "application/pdf",
              },
              {
                type: "media",
                kind: "document",
                ref: `data:application/pdf;base64,${pdf}`,
                contentType: "application/pdf",
              },
              {
                type: "media",
                kind: "document",
                ref: `data:text/plain;base64,${Buffer.from("naïve text").toString("base64")}`,
                contentType: "text/plain",
              },
              { type: "text", text: "Describe these." },
            ],
          },
        ],
      }),
    );
    expect((body.messages as { content: unknown[] }[])[0]?.content).toEqual([
      { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
      { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } },
      { type: "document", source: { type: "url", url: "https://example.com/report.pdf" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "naïve text" } },
      { type: "text", text: "Describe these." },
    ]);
  });

  it("sends the loop's resolved bytes (the block's request-only data) as base64 sources", async () => {
    const png = Buffer.from([137, 80, 78, 71]).toString("base64");
    const pdf = Buffer.from("%PDF-1.4 test").toString("base64");
    const request = baseRequest("claude-haiku-4-5", {
      messages: [
        {
          role: "user",
          blocks: [
            {
              type: "media",
              kind: "image",
              ref: "media:1",
              contentType: "image/png",
              sizeBytes: 4,
              data: png,
            },
            {
              type: "media",
              kind: "document",
              ref: "media:2",
              contentType: "application/pdf",
              data: pdf,
            },
            {
              type: "media",
              kind: "document",
              ref: "media:3",
              contentType: "text/plain",
              data: Buffer.from("naïve text").toString("base64"),
            },
          ],
        },
      ],
    });
    expect(() => client().validate(request)).not.toThrow();
    const body = await sent(request);
    expect((body.messages as { content: unknown[] }[])[0]?.content).toEqual([
      { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: pdf } },
      { type: "document", source: { type: "text", media_type: "text/plain", data: "naïve text" } },
    ]);
    expect(JSON.stringify(body)).not.toContain("media:1");
  });

  it("places cache breakpoints on the system prefix, the conversation tail (not on a harness block) and the previous tail", async () => {
    const request = baseRequest("claude-haiku-4-5", {
      system: [
        { type: "text", text: "Stable instructions." },
        { type: "text", text: "More stable text." },
      ],
      tools: [weather],
      messages: [
        userText("first"),
        { role: "assistant", blocks: [{ type: "text", text: "answer" }] },
        {
          role: "user",
          blocks: [
            { type: "text", text: "second" },
            { type: "text", text: "Today is Monday.", origin: "harness" },
          ],
        },
      ],
      cache: { ttl: "1h" },
    });
    const body = await sent(request);
    const marker = { type: "ephemeral", ttl: "1h" };
    expect(body.system).toEqual([
      { type: "text", text: "Stable instructions." },
      { type: "text", text: "More stable text.", cache_control: marker },
    ]);
    expect(body.tools).toEqual([
      { name: "get_weather", description: "Weather for a city", input_schema: weather.inputSchema },
    ]);
    expect(body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "first", cache_control: marker }] },
      { role: "assistant", content: [{ type: "text", text: "answer" }] },
      {
        role: "user",
        content: [
          { type: "text", text: "second", cache_control: marker },
          { type: "text", text: "Today is Monday." },
        ],
      },
    ]);

    const prefixOnly = await sent({ ...request, cache: { ttl: "5m", conversationTail: false } });
    expect(JSON.stringify(prefixOnly.messages)).not.toContain("cache_control");
    expect((prefixOnly.system as { cache_control?: unknown }[])[1]?.cache_control).toEqual({
      type: "ephemeral",
      ttl: "5m",
    });

    const disabled = await sent({ ...request, cache: false });
    expect(JSON.stringify(disabled)).not.toContain("cache_control");

    const noSystem = await sent({
      ...request,
      system: [],
      cache: { ttl: "5m", conversationTail: false },
    });
    expect(noSystem.tools).toEqual([
      {
        name: "get_weather",
        description: "Weather for a city",
        input_schema: weather.inputSchema,
        cache_control: { type: "ephemeral", ttl: "5m" },
      },
    ]);
  });

  it("puts the tail breakpoint on the last cacheable block, after a tool result", async () => {
    const body = await sent(
      baseRequest("claude-haiku-4-5", {
        cache: { ttl: "5m" },
        messages: [
          userText("Weather?"),
          {
            role: "assistant",
            blocks: [{ type: "tool_call", id: "t1", name: "get_weather", input: { city: "Oslo" } }],
          },
          {
            role: "user",
            blocks: [
              {
                type: "tool_result",
                callId: "t1",
                name: "get_weather",
                output: "rain",
                isError: false,
              },
            ],
          },
        ],
        tools: [weather],
      }),
    );
    expect((body.messages as { content: unknown[] }[])[2]?.content).toEqual([
      {
        type: "tool_result",
        tool_use_id: "t1",
        content: "rain",
        is_error: false,
        cache_control: { type: "ephemeral", ttl: "5m" },
      },
    ]);
  });

  it("declares the web search server tool with max_uses and replays provider blocks verbatim", async () => {
    const call = {
      type: "server_tool_use",
      id: "srvtoolu_1",
      name: "web_search",
      input: { query: "alma" },
    };
    const result = {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_1",
      content: [{ type: "web_search_result", url: "https://a.example", encrypted_content: "enc" }],
    };
    const body = await sent(
      baseRequest("claude-sonnet-4-5", {
        providerTools: [{ kind: "web_search", maxSensitivity: "internal", maxUses: 3 }],
        messages: [
          userText("Search."),
          {
            role: "assistant",
            blocks: [
              {
                type: "provider_tool_call",
                provider: "anthropic",
                id: "srvtoolu_1",
                name: "web_search",
                payload: call,
              },
              {
                type: "provider_tool_result",
                provider: "anthropic",
                callId: "srvtoolu_1",
                name: "web_search",
                resultCount: 1,
                payload: result,
              },
              {
                type: "provider_tool_call",
                provider: "openai",
                id: "ws_1",
                name: "web_search",
                payload: { type: "web_search_call" },
              },
              { type: "text", text: "Found it." },
            ],
          },
          userText("Thanks"),
        ],
      }),
    );
    expect(body.tools).toEqual([{ type: "web_search_20250305", name: "web_search", max_uses: 3 }]);
    expect((body.messages as { content: unknown[] }[])[1]?.content).toEqual([
      call,
      result,
      { type: "text", text: "Found it." },
    ]);
  });

  it("maps temperature and the service tier", async () => {
    const body = await sent(
      baseRequest("claude-haiku-4-5", { temperature: 0.2, serviceTier: "standard" }),
    );
    expect(body.temperature).toBe(0.2);
    expect(body.service_tier).toBe("standard_only");
  });
});

describe("Anthropic validate refuses before any I/O", () => {
  const refusals: [string, Partial<ModelRequest>][] = [
    [
      "a toolChoice naming an absent tool",
      { tools: [weather], toolChoice: { type: "tool", name: "nope" } },
    ],
    ["required with no tools", { toolChoice: { type: "required" } }],
    [
      "thinking with a forced tool",
      {
        tools: [weather],
        toolChoice: { type: "required" },
        reasoning: "low",
        maxOutputTokens: 4096,
      },
    ],
    ["thinking with a temperature", { reasoning: "low", temperature: 0.5, maxOutputTokens: 4096 }],
    ["thinking without room for a budget", { reasoning: "low", maxOutputTokens: 1024 }],
    ["a temperature the model rejects", { model: "claude-opus-5-5", temperature: 0.3 }],
    [
      "forced tool use on a model that refuses it",
      {
        model: "claude-sonnet-5-5",
        tools: [weather],
        toolChoice: { type: "tool", name: "get_weather" },
      },
    ],
    [
      "a host media id",
      {
        messages: [
          {
            role: "user",
            blocks: [{ type: "media", kind: "image", ref: "media:123", contentType: "image/png" }],
          },
        ],
      },
    ],
    [
      "an unsupported image type",
      {
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "image",
                ref: "https://x.example/a.tiff",
                contentType: "image/tiff",
              },
            ],
          },
        ],
      },
    ],
    [
      "a document type it cannot read, by bytes",
      {
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "document",
                ref: "media:9",
                contentType: "application/msword",
                data: "AAAA",
              },
            ],
          },
        ],
      },
    ],
    [
      "a plain-text document by URL",
      {
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "document",
                ref: "https://x.example/a.txt",
                contentType: "text/plain",
              },
            ],
          },
        ],
      },
    ],
    ["the batch tier", { serviceTier: "batch" }],
    ["a malformed cache ttl", { cache: { ttl: "2h" as "1h" } }],
    [
      "a tool result in an assistant message",
      {
        messages: [
          {
            role: "assistant",
            blocks: [{ type: "tool_result", callId: "x", name: "y", output: "", isError: false }],
          },
        ],
      },
    ],
    ["no messages", { messages: [] }],
    ["a temperature out of range", { temperature: 3 }],
  ];
  for (const [what, overrides] of refusals) {
    it(`refuses ${what}`, async () => {
      const request = baseRequest("claude-sonnet-4-5", overrides);
      expect(() => client().validate(request)).toThrow(
        expect.objectContaining({ kind: "unsupported", provider: "anthropic" }),
      );
      await expect(collect(client(), request)).rejects.toMatchObject({ kind: "unsupported" });
      expect(server.requests).toHaveLength(0);
    });
  }

  it("honors per-model trait overrides", () => {
    const custom = createAnthropicClient({
      baseURL: `${server.url}/v1`,
      models: () => ({ temperature: "any", forcedToolChoice: true }),
    });
    expect(() =>
      custom.validate(baseRequest("claude-opus-5-5", { temperature: 0.3 })),
    ).not.toThrow();
  });
});
