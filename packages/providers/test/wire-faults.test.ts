import type { JsonObject, ModelClient } from "@alma-harness/core";
import { ValidationError } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import {
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAIResponsesClient,
  createOpenRouterClient,
} from "../src/index.js";
import { baseRequest, collect, collectError, terminal, userText } from "./helpers/collect.js";
import { ANTHROPIC_TEXT, cassette, chunkLines, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/** Issue 19, finding 6: the smaller wire faults that break sessions, on recorded and documented traffic. */
const server = serverPerTest();
const json = { "content-type": "application/json" };
const anthropic = (): ModelClient =>
  createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
const openrouter = (): ModelClient =>
  createOpenRouterClient({ apiKey: "k", baseURL: `${server.url}/api/v1` });

async function failure(
  client: ModelClient,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  server.enqueue({ status, headers: { ...json, ...headers }, body: JSON.stringify(body) });
  return (await collectError(client, baseRequest("claude-haiku-4-5"))).error;
}

describe("Anthropic text blocks", () => {
  it("drops whitespace-only text blocks and right-trims the final assistant text", async () => {
    server.enqueue({ body: ANTHROPIC_TEXT });
    const events = await collect(
      anthropic(),
      baseRequest("claude-haiku-4-5", {
        messages: [
          userText("Search, then answer."),
          {
            role: "assistant",
            blocks: [
              { type: "text", text: "\n\n" },
              { type: "tool_call", id: "toolu_1", name: "probe", input: {} },
            ],
          },
          {
            role: "user",
            blocks: [
              {
                type: "tool_result",
                callId: "toolu_1",
                name: "probe",
                output: "ok",
                isError: false,
              },
              { type: "text", text: " \t" },
            ],
          },
          { role: "assistant", blocks: [{ type: "text", text: "The answer is \n" }] },
        ],
        tools: [{ name: "probe", description: "Probe", inputSchema: { type: "object" } }],
      }),
    );
    expect(terminal(events).stopReason).toBe("end_turn");
    expect((server.requests[0]!.body as { messages: unknown }).messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Search, then answer." }] },
      {
        role: "assistant",
        content: [{ type: "tool_use", id: "toolu_1", name: "probe", input: {} }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "ok", is_error: false }],
      },
      { role: "assistant", content: [{ type: "text", text: "The answer is" }] },
    ]);
  });

  it("a final assistant message of whitespace only is left out; earlier text keeps its whitespace", async () => {
    server.enqueue({ body: ANTHROPIC_TEXT });
    await collect(
      anthropic(),
      baseRequest("claude-haiku-4-5", {
        messages: [
          userText("Hi"),
          { role: "assistant", blocks: [{ type: "text", text: "Hello \n" }] },
          userText("Again"),
          { role: "assistant", blocks: [{ type: "text", text: "  " }] },
        ],
      }),
    );
    expect((server.requests[0]!.body as { messages: unknown }).messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Hi" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello \n" }] },
      { role: "user", content: [{ type: "text", text: "Again" }] },
    ]);
  });
});

describe("OpenRouter function tools", () => {
  it("go out with strict: false explicitly (the recorded tool with an optional property)", async () => {
    const recorded = cassette("openrouter/test_openrouter_tool_optional_parameters.yaml")[0]
      ?.request.parsed_body as {
      tools: { function: { name: string; description: string; parameters: JsonObject } }[];
    };
    const fn = recorded.tools[0]?.function;
    if (!fn) throw new Error("no recorded tool");
    server.enqueue({
      body:
        cassette("openrouter/test_openrouter_streaming_reasoning.yaml")[0]?.response.body?.string ??
        "",
    });
    const events = await collect(
      openrouter(),
      baseRequest("anthropic/claude-sonnet-4.5", {
        tools: [{ name: fn.name, description: fn.description, inputSchema: fn.parameters }],
      }),
    );
    expect(terminal(events).stopReason).toBe("end_turn");
    expect((server.requests[0]!.body as { tools: unknown }).tools).toEqual([
      {
        type: "function",
        function: { name: fn.name, description: "", parameters: fn.parameters, strict: false },
      },
    ]);
  });

  it("Chat Completions on OpenAI itself keeps its default (no strict field)", async () => {
    server.enqueue({
      body: toSse(chunkLines("openai/openai-text.chunks.txt"), { named: false, done: true }),
    });
    await collect(
      createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
      baseRequest("gpt-4.1-nano", {
        tools: [{ name: "t", description: "T", inputSchema: { type: "object" } }],
      }),
    );
    expect(
      (server.requests[0]!.body as { tools: { function: object }[] }).tools[0]?.function,
    ).not.toHaveProperty("strict");
  });
});

describe("Responses reasoning summary", () => {
  const first = () => {
    const out: string[][] = [];
    for (const line of chunkLines("openai/openai-reasoning-encrypted-content.1.chunks.txt")) {
      if (line.includes('"type":"response.created"')) out.push([]);
      out.at(-1)?.push(line);
    }
    return toSse(out[0] ?? [], { named: true });
  };
  it("is a client option: auto by default, none sends no summary request, others as given", async () => {
    server.enqueue({ body: first() }, { body: first() }, { body: first() });
    const request = baseRequest("gpt-5.1-codex-max", { reasoning: "low" });
    await collect(
      createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
      request,
    );
    await collect(
      createOpenAIResponsesClient({
        apiKey: "k",
        baseURL: `${server.url}/v1`,
        reasoningSummary: "none",
      }),
      request,
    );
    const detailed = await collect(
      createOpenAIResponsesClient({
        apiKey: "k",
        baseURL: `${server.url}/v1`,
        reasoningSummary: "detailed",
      }),
      request,
    );
    expect(server.requests.map((r) => (r.body as { reasoning: unknown }).reasoning)).toEqual([
      { effort: "low", summary: "auto" },
      { effort: "low" },
      { effort: "low", summary: "detailed" },
    ]);
    expect(terminal(detailed).stopReason).toBe("tool_use");
    expect(() => createOpenAIResponsesClient({ reasoningSummary: "brief" as never })).toThrow(
      ValidationError,
    );
  });
});

describe("classification", () => {
  it("OpenRouter 403 for flagged input is a refused request, not a bad key; a plain 403 stays auth", async () => {
    const flagged = {
      error: {
        code: 403,
        message:
          'openai/gpt-4o requires moderation on OpenRouter. Your input was flagged for "violence".',
        metadata: {
          reasons: ["violence"],
          flagged_input: "…",
          provider_name: "OpenAI",
          model_slug: "openai/gpt-4o",
        },
      },
    };
    expect(await failure(openrouter(), 403, flagged)).toMatchObject({
      kind: "invalid_request",
      retryable: false,
      status: 403,
    });
    expect(
      await failure(openrouter(), 403, {
        error: { code: 403, message: "Insufficient permissions for this key" },
      }),
    ).toMatchObject({ kind: "auth" });
  });

  it("OpenRouter 503 'no provider meets your routing requirements' is not retryable; another 503 is", async () => {
    expect(
      await failure(openrouter(), 503, {
        error: {
          code: 503,
          message: "There is no available model provider that meets your routing requirements",
        },
      }),
    ).toMatchObject({ kind: "invalid_request", retryable: false });
    expect(
      await failure(openrouter(), 503, { error: { code: 503, message: "Service unavailable" } }),
    ).toMatchObject({ kind: "server", retryable: true });
  });

  it("409 is a retryable conflict; x-should-retry overrides the classification either way", async () => {
    expect(
      await failure(anthropic(), 409, {
        type: "error",
        error: { type: "conflict_error", message: "conflict" },
      }),
    ).toMatchObject({ kind: "server", retryable: true, status: 409 });
    expect(
      await failure(
        anthropic(),
        409,
        { type: "error", error: { type: "conflict_error", message: "conflict" } },
        { "x-should-retry": "false" },
      ),
    ).toMatchObject({ retryable: false });
    expect(
      await failure(
        anthropic(),
        500,
        { type: "error", error: { type: "api_error", message: "boom" } },
        { "x-should-retry": "false" },
      ),
    ).toMatchObject({ kind: "server", retryable: false });
    expect(
      await failure(
        anthropic(),
        400,
        { type: "error", error: { type: "invalid_request_error", message: "bad" } },
        { "x-should-retry": "true" },
      ),
    ).toMatchObject({ kind: "invalid_request", retryable: true });
    // never revives a failure ruled final: a spent OpenAI quota stays final
    const openai = createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    expect(
      await failure(
        openai,
        429,
        {
          error: {
            message: "You exceeded your current quota",
            type: "insufficient_quota",
            code: "insufficient_quota",
          },
        },
        { "x-should-retry": "true" },
      ),
    ).toMatchObject({ kind: "rate_limited", retryable: false });
  });

  it("context overflow is anchored to the provider's overflow type and messages (P6: a mention of a context window is not one)", async () => {
    const anthropicError = (type: string, message: string) => ({
      type: "error",
      error: { type, message },
    });
    expect(
      await failure(
        anthropic(),
        400,
        anthropicError(
          "invalid_request_error",
          "prompt is too long: 208310 tokens > 200000 maximum",
        ),
      ),
    ).toMatchObject({ kind: "context_window" });
    expect(
      await failure(
        anthropic(),
        400,
        anthropicError(
          "invalid_request_error",
          "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000",
        ),
      ),
    ).toMatchObject({ kind: "context_window" });
    expect(
      await failure(
        anthropic(),
        400,
        anthropicError(
          "invalid_request_error",
          "tools.3: this beta enables context window management; remove it",
        ),
      ),
    ).toMatchObject({ kind: "invalid_request" });
    expect(
      await failure(
        anthropic(),
        400,
        anthropicError("billing_error", "prompt is too long for your plan"),
      ),
    ).toMatchObject({ kind: "invalid_request" });
    const openai = createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    expect(
      await failure(openai, 400, {
        error: {
          message: "Unsupported parameter: context window management is not available",
          type: "invalid_request_error",
          code: null,
        },
      }),
    ).toMatchObject({ kind: "invalid_request" });
    expect(
      await failure(openai, 400, {
        error: {
          message: "This model's maximum context length is 128000 tokens.",
          type: "invalid_request_error",
          code: "context_length_exceeded",
        },
      }),
    ).toMatchObject({ kind: "context_window" });
  });
});
