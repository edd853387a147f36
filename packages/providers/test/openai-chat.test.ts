import type { ModelRequest } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createOpenAIChatClient, createOpenAICompatibleClient } from "../src/index.js";
import {
  baseRequest,
  collect,
  terminal,
  textOfEvents,
  usageEvidence,
  userText,
} from "./helpers/collect.js";
import { cassette, chunkLines, readFixture, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const openai = () =>
  createOpenAIChatClient({ apiKey: "sk-test", baseURL: `${server.url}/v1`, organization: "org-1" });
const TEXT = toSse(chunkLines("openai/openai-text.chunks.txt"), { named: false, done: true });

describe("OpenAI Chat Completions, recorded traffic", () => {
  it("streams text split awkwardly, ignores obfuscation, and reads the trailing usage chunk", async () => {
    server.enqueue({ body: TEXT, split: "awkward" });
    const events = await collect(openai(), baseRequest("gpt-4.1-nano"));
    const end = terminal(events);
    expect(end.stopReason).toBe("end_turn");
    expect(end.text).toBe(textOfEvents(events));
    expect(end.text.startsWith("**Holiday Name:**")).toBe(true);
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 16,
        outputTokens: 300,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: "standard",
      },
    });
    const captured = server.requests[0];
    expect(captured?.path).toBe("/v1/chat/completions");
    expect(captured?.headers.authorization).toBe("Bearer sk-test");
    expect(captured?.headers["openai-organization"]).toBe("org-1");
  });

  it("accumulates a streamed tool call by index, then sends the recorded follow-up request exactly", async () => {
    const [first, second] = cassette("openai/test_run_stream_sync_streams_real_model.yaml");
    server.enqueue(
      { body: first?.response.body?.string ?? "", split: "awkward" },
      { body: second?.response.body?.string ?? "" },
    );
    const tool = {
      name: "get_capital",
      description: "",
      inputSchema: {
        additionalProperties: false,
        properties: { country: { type: "string" } },
        required: ["country"],
        type: "object",
      },
    };
    const request: ModelRequest = {
      ...baseRequest("gpt-4o-mini"),
      messages: [userText("What is the capital of the UK? Use the tool, then answer.")],
      tools: [tool],
      toolChoice: { type: "auto" },
    };
    const events = await collect(openai(), request);
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      text: "",
      toolCalls: [
        { id: "call_ZR5UUuTt3pf61kjwAJIYdVMj", name: "get_capital", arguments: '{"country":"UK"}' },
      ],
    });
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 53, outputTokens: 15 },
    });
    const followUp: ModelRequest = {
      ...request,
      messages: [
        ...request.messages,
        {
          role: "assistant",
          blocks: [
            {
              type: "tool_call",
              id: "call_ZR5UUuTt3pf61kjwAJIYdVMj",
              name: "get_capital",
              input: { country: "UK" },
            },
          ],
        },
        {
          role: "user",
          blocks: [
            {
              type: "tool_result",
              callId: "call_ZR5UUuTt3pf61kjwAJIYdVMj",
              name: "get_capital",
              output: "London",
              isError: false,
            },
          ],
        },
      ],
    };
    const answer = await collect(openai(), followUp);
    expect(terminal(answer).text).toBe("The capital of the UK is London.");
    const body = server.requests[1]?.body as Record<string, unknown>;
    const recorded = second?.request.parsed_body as Record<string, unknown>;
    // The recording client sent `strict: true` tools; this adapter sends schemas as registered.
    const recordedTools = (recorded.tools as { function: Record<string, unknown> }[]).map((t) => {
      const { strict: _strict, ...fn } = t.function;
      return { ...t, function: fn };
    });
    expect(body).toEqual({ ...recorded, tools: recordedTools, max_completion_tokens: 1024 });
  });

  it("sends system, media, JSON schema output, reasoning effort and the service tier", async () => {
    server.enqueue({ body: TEXT });
    const schema = { type: "object", properties: { a: { type: "string" } } };
    await collect(
      openai(),
      baseRequest("gpt-5-mini", {
        system: [
          { type: "text", text: "Rule one." },
          { type: "text", text: "Rule two." },
        ],
        messages: [
          {
            role: "user",
            blocks: [
              { type: "text", text: "Look:" },
              {
                type: "media",
                kind: "image",
                ref: "https://example.com/a.png",
                contentType: "image/png",
              },
              {
                type: "media",
                kind: "image",
                ref: "data:image/png;base64,iVBORw0KGgo=",
                contentType: "image/png",
              },
              {
                type: "media",
                kind: "document",
                ref: "data:application/pdf;base64,JVBERi0=",
                contentType: "application/pdf",
              },
            ],
          },
        ],
        output: { name: "result", schema },
        reasoning: "low",
        serviceTier: "flex",
        maxOutputTokens: 500,
      }),
    );
    expect(server.requests[0]?.body).toEqual({
      model: "gpt-5-mini",
      messages: [
        { role: "system", content: "Rule one.\n\nRule two." },
        {
          role: "user",
          content: [
            { type: "text", text: "Look:" },
            { type: "image_url", image_url: { url: "https://example.com/a.png" } },
            { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
            {
              type: "file",
              file: {
                file_data: "data:application/pdf;base64,JVBERi0=",
                filename: "document-1.pdf",
              },
            },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 500,
      response_format: {
        type: "json_schema",
        json_schema: { name: "result", schema, strict: false },
      },
      reasoning_effort: "low",
      service_tier: "flex",
    });
  });

  it("sends a failed tool result as its text, and skips reasoning it cannot replay", async () => {
    server.enqueue({ body: TEXT });
    await collect(
      openai(),
      baseRequest("gpt-4.1", {
        tools: [{ name: "lookup", description: "Look up", inputSchema: { type: "object" } }],
        toolChoice: { type: "tool", name: "lookup" },
        temperature: 0.4,
        messages: [
          userText("Find it."),
          {
            role: "assistant",
            blocks: [
              { type: "reasoning", text: "hmm", signature: "sig" },
              { type: "text", text: "Looking." },
              { type: "tool_call", id: "call_1", name: "lookup", input: { q: "x" } },
            ],
          },
          {
            role: "user",
            blocks: [
              {
                type: "tool_result",
                callId: "call_1",
                name: "lookup",
                output: "not found",
                isError: true,
              },
              { type: "text", text: "Try again." },
            ],
          },
        ],
      }),
    );
    const body = server.requests[0]?.body as Record<string, unknown>;
    expect(body.messages).toEqual([
      { role: "user", content: "Find it." },
      {
        role: "assistant",
        content: "Looking.",
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "lookup", arguments: '{"q":"x"}' } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "not found" },
      { role: "user", content: "Try again." },
    ]);
    expect(body.tool_choice).toEqual({ type: "function", function: { name: "lookup" } });
    expect(body.temperature).toBe(0.4);
  });

  it("reads cache writes and reads from the recorded gpt-5.6 usage: ordinary input excludes both", async () => {
    const [first, second] = cassette("openai/test_openai_chat_prompt_cache_e2e.yaml");
    for (const [exchange, expected] of [
      [first, { inputTokens: 8, cacheWrite5mTokens: 4012, cacheReadTokens: 0 }],
      [second, { inputTokens: 8, cacheWrite5mTokens: 0, cacheReadTokens: 4012 }],
    ] as const) {
      const body = exchange?.response.parsed_body as { usage: unknown; model: string };
      const chunk = {
        id: "c",
        object: "chat.completion.chunk",
        model: body.model,
        choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }],
      };
      server.enqueue({
        body: toSse(
          [JSON.stringify(chunk), JSON.stringify({ ...chunk, choices: [], usage: body.usage })],
          { named: false, done: true },
        ),
      });
      const events = await collect(openai(), baseRequest("gpt-5.6-sol"));
      expect(usageEvidence(events)).toMatchObject({ status: "known", usage: expected });
    }
  });

  it("reports unknown usage, never zero, when the stream ends without a usage chunk", async () => {
    const lines = chunkLines("openai/openai-text.chunks.txt").filter(
      (l) => !l.includes('"usage":{'),
    );
    server.enqueue({ body: toSse(lines, { named: false, done: true }) });
    const events = await collect(openai(), baseRequest("gpt-4.1-nano"));
    expect(usageEvidence(events)).toEqual({ status: "unknown" });
    expect(terminal(events).usage).toBeUndefined();
  });

  it("refuses unsupported controls before any I/O", async () => {
    const refusals: Partial<ModelRequest>[] = [
      { cache: { ttl: "5m" } },
      { model: "gpt-5", temperature: 0.2 },
      { model: "gpt-4.1", reasoning: "high" },
      { providerTools: [{ kind: "web_search", maxSensitivity: "internal" }] },
      {
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "document",
                ref: "https://x.example/a.pdf",
                contentType: "application/pdf",
              },
            ],
          },
        ],
      },
      { serviceTier: "batch" },
      { output: { name: "bad name!", schema: { type: "object" } } },
    ];
    for (const overrides of refusals) {
      const request = baseRequest("gpt-4.1", overrides);
      expect(() => openai().validate(request), JSON.stringify(overrides)).toThrow(
        expect.objectContaining({ kind: "unsupported", provider: "openai" }),
      );
    }
    expect(() => openai().validate(baseRequest("gpt-4.1", { cache: false }))).not.toThrow();
    expect(server.requests).toHaveLength(0);
  });
});

describe("OpenAI-compatible servers", () => {
  const gateway = (capabilities = {}) =>
    createOpenAICompatibleClient({
      baseURL: `${server.url}/v1`,
      capabilities,
      provider: "local-vllm",
    });

  it("reads a gateway trace whose tool calls start at index 1, without sending a key", async () => {
    server.enqueue({
      body: readFixture("openai-compatible/anthropic-fallback-tool-call.sse"),
      split: "awkward",
    });
    const request = baseRequest("claude-haiku-4-5", {
      tools: [{ name: "read_file", description: "Read a file", inputSchema: { type: "object" } }],
    });
    const events = await collect(gateway({ tools: true }), request);
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      text: "Reading it.",
      toolCalls: [{ id: "toolu_sanitized", name: "read_file", arguments: '{"path": "a.txt"}' }],
    });
    expect(usageEvidence(events)).toEqual({ status: "unknown" });
    expect(server.requests[0]?.headers.authorization).toBeUndefined();
    expect(server.requests[0]?.body).toEqual({
      model: "claude-haiku-4-5",
      messages: [{ role: "user", content: "Hello" }],
      stream: true,
      max_tokens: 1024,
      tools: [
        {
          type: "function",
          function: {
            name: "read_file",
            description: "Read a file",
            parameters: { type: "object" },
          },
        },
      ],
    });
  });

  it("sends the loop's resolved bytes as data URLs: an image_url and a file part", async () => {
    server.enqueue({ body: TEXT });
    const request = baseRequest("gpt-5-mini", {
      messages: [
        {
          role: "user",
          blocks: [
            {
              type: "media",
              kind: "image",
              ref: "media:1",
              contentType: "image/png",
              data: "iVBORw0KGgo=",
            },
            {
              type: "media",
              kind: "document",
              ref: "media:2",
              contentType: "application/pdf",
              data: "JVBERi0=",
            },
          ],
        },
      ],
    });
    expect(() => openai().validate(request)).not.toThrow();
    await collect(openai(), request);
    expect((server.requests[0]!.body as { messages: unknown[] }).messages).toEqual([
      {
        role: "user",
        content: [
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          {
            type: "file",
            file: { file_data: "data:application/pdf;base64,JVBERi0=", filename: "document-1.pdf" },
          },
        ],
      },
    ]);
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain("media:1");
  });

  it("refuses document bytes where the gateway does not declare documents, and an unsupported type", () => {
    const pdf = {
      messages: [
        {
          role: "user" as const,
          blocks: [
            {
              type: "media" as const,
              kind: "document" as const,
              ref: "media:2",
              contentType: "application/pdf",
              data: "JVBERi0=",
            },
          ],
        },
      ],
    };
    expect(() => gateway({ images: true }).validate(baseRequest("m", pdf))).toThrow(
      expect.objectContaining({ kind: "unsupported" }),
    );
    expect(() => gateway({ documents: true }).validate(baseRequest("m", pdf))).not.toThrow();
    const word = {
      messages: [
        {
          role: "user" as const,
          blocks: [
            {
              type: "media" as const,
              kind: "document" as const,
              ref: "media:3",
              contentType: "application/msword",
              data: "AAAA",
            },
          ],
        },
      ],
    };
    expect(() => openai().validate(baseRequest("m", word))).toThrow(
      expect.objectContaining({ kind: "unsupported" }),
    );
  });

  it("refuses what the operator did not declare, and honors what they did", () => {
    const tools = { tools: [{ name: "f", description: "f", inputSchema: { type: "object" } }] };
    expect(() => gateway().validate(baseRequest("m", tools))).toThrow(
      expect.objectContaining({ kind: "unsupported", provider: "local-vllm" }),
    );
    expect(() => gateway().validate(baseRequest("m", { reasoning: "low" }))).toThrow(
      expect.objectContaining({ kind: "unsupported" }),
    );
    expect(() =>
      gateway().validate(baseRequest("m", { output: { name: "o", schema: { type: "object" } } })),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
    expect(() =>
      gateway({ temperature: false }).validate(baseRequest("m", { temperature: 0.1 })),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
    expect(() =>
      gateway().validate(
        baseRequest("m", {
          messages: [
            {
              role: "user",
              blocks: [
                {
                  type: "media",
                  kind: "image",
                  ref: "https://a.example/x.png",
                  contentType: "image/png",
                },
              ],
            },
          ],
        }),
      ),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
    expect(() =>
      gateway({ tools: true, reasoning: true, jsonSchema: true }).validate(
        baseRequest("m", {
          ...tools,
          reasoning: "low",
          output: { name: "o", schema: { type: "object" } },
        }),
      ),
    ).not.toThrow();
  });

  it("sends the key, stream usage and reasoning effort when declared; reads reasoning_content", async () => {
    const chunks = [
      { id: "x", choices: [{ index: 0, delta: { reasoning_content: "thinking…" } }] },
      { id: "x", choices: [{ index: 0, delta: { content: "Hi" } }] },
      { id: "x", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
      { id: "x", choices: [], usage: { prompt_tokens: 5, completion_tokens: 7 } },
    ].map((c) => JSON.stringify(c));
    server.enqueue({ body: toSse(chunks, { named: false, done: true }) });
    const client = createOpenAICompatibleClient({
      baseURL: `${server.url}/v1`,
      apiKey: "local-key",
      capabilities: { streamUsage: true, reasoning: true, maxTokensField: "max_completion_tokens" },
    });
    const events = await collect(client, baseRequest("qwen3", { reasoning: "medium" }));
    expect(events.filter((e) => e.type === "reasoning_delta")).toEqual([
      { type: "reasoning_delta", text: "thinking…" },
    ]);
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: { inputTokens: 5, outputTokens: 7 },
    });
    expect(server.requests[0]?.headers.authorization).toBe("Bearer local-key");
    expect(server.requests[0]?.body).toMatchObject({
      stream_options: { include_usage: true },
      max_completion_tokens: 1024,
      reasoning_effort: "medium",
    });
    expect(client.provider).toBe("openai-compatible");
  });

  it("treats tool calls sent whole at one index as separate calls, and 'stop' with calls as tool_use", async () => {
    const chunks = [
      {
        id: "y",
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [{ index: 0, id: "a", function: { name: "f", arguments: "{}" } }],
            },
          },
        ],
      },
      {
        id: "y",
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [{ index: 0, id: "b", function: { name: "g", arguments: '{"x":1}' } }],
            },
          },
        ],
      },
      { id: "y", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    ].map((c) => JSON.stringify(c));
    server.enqueue({ body: toSse(chunks, { named: false }) });
    const events = await collect(
      gateway({ tools: true }),
      baseRequest("m", {
        tools: [{ name: "f", description: "f", inputSchema: { type: "object" } }],
      }),
    );
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      toolCalls: [
        { id: "a", name: "f", arguments: "{}" },
        { id: "b", name: "g", arguments: '{"x":1}' },
      ],
    });
  });

  it("rejects a missing or non-http baseURL and a reserved provider name", () => {
    expect(() => createOpenAICompatibleClient({ baseURL: "localhost:8000" })).toThrow(/baseURL/);
    expect(() => createOpenAICompatibleClient({ baseURL: "http://x", provider: "openai" })).toThrow(
      /reserved|dedicated/,
    );
  });
});
