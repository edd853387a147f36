import { describe, expect, it } from "vitest";
import { createOpenRouterClient } from "../src/index.js";
import {
  assistantMessage,
  baseRequest,
  collect,
  collectError,
  terminal,
  textOfEvents,
  usageEvidence,
  userText,
} from "./helpers/collect.js";
import { cassette } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const client = () =>
  createOpenRouterClient({
    apiKey: "sk-or-test",
    baseURL: `${server.url}/api/v1`,
    appUrl: "https://alma.example",
    appName: "Alma tests",
  });

describe("OpenRouter, recorded traffic", () => {
  it("skips keep-alive comments, streams reasoning_details, and closes reasoning with its replay data", async () => {
    const [exchange] = cassette("openrouter/test_openrouter_streaming_reasoning.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "", split: "awkward" });
    const request = baseRequest("anthropic/claude-sonnet-4.5", {
      messages: [userText("What is 2+2?")],
      reasoning: "low",
    });
    const events = await collect(client(), request);
    const reasoning = events.filter((e) => e.type === "reasoning_delta");
    expect(reasoning.map((e) => e.text).join("")).toBe(
      "This is a simple arithmetic question. 2+2 equals 4.",
    );
    const details = JSON.parse(reasoning.at(-1)?.signature ?? "[]") as Record<string, unknown>[];
    expect(details).toEqual([
      {
        type: "reasoning.text",
        text: "This is a simple arithmetic question. 2+2 equals 4.",
        signature: expect.stringMatching(/^Et0BCkgI/),
        format: "anthropic-claude-v1",
        index: 0,
      },
    ]);
    expect(terminal(events)).toMatchObject({ stopReason: "end_turn", text: "2 + 2 = 4" });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      upstream: "google",
      usage: { inputTokens: 43, outputTokens: 36, cacheReadTokens: 0, reasoningTokens: 13 },
    });
    const captured = server.requests[0];
    expect(captured?.path).toBe("/api/v1/chat/completions");
    expect(captured?.headers.authorization).toBe("Bearer sk-or-test");
    expect(captured?.headers["http-referer"]).toBe("https://alma.example");
    expect(captured?.headers["x-title"]).toBe("Alma tests");
    expect(captured?.body).toEqual({
      model: "anthropic/claude-sonnet-4.5",
      messages: [{ role: "user", content: "What is 2+2?" }],
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 1024,
      reasoning: { effort: "low" },
    });

    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    await collect(client(), {
      ...request,
      messages: [
        ...request.messages,
        assistantMessage(events, "openrouter", request.model),
        userText("And 3+3?"),
      ],
    });
    expect((server.requests[1]!.body as { messages: unknown[] }).messages[1]).toEqual({
      role: "assistant",
      content: "2 + 2 = 4",
      reasoning_details: details,
    });
  });

  it("declares its web search server tool and counts searches from usage", async () => {
    const [exchange] = cassette("openrouter/test_openrouter_web_search_tool_usage_stream.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    const request = baseRequest("openai/gpt-4.1-mini", {
      providerTools: [{ kind: "web_search", maxSensitivity: "public", maxUses: 1 }],
    });
    const events = await collect(client(), request);
    expect(textOfEvents(events)).toBe("https://github.com/pydantic/pydantic-ai ");
    expect(usageEvidence(events)).toEqual({
      status: "known",
      upstream: "openai",
      usage: {
        inputTokens: 8174,
        outputTokens: 30,
        cacheReadTokens: 0,
        cacheWrite5mTokens: 0,
        reasoningTokens: 0,
        webSearchRequests: 1,
        serviceTier: "standard",
      },
    });
    expect((server.requests[0]!.body as { tools: unknown }).tools).toEqual([
      { type: "openrouter:web_search", parameters: { max_uses: 1 } },
    ]);
  });

  it("an error chunk right after finish_reason length completes as max_tokens with the usage it carried (was provider_error, unknown usage)", async () => {
    const [exchange] = cassette("openrouter/test_openrouter_stream_error.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    const events = await collect(
      client(),
      baseRequest("minimax/minimax-m2:free", { maxOutputTokens: 10 }),
    );
    expect(server.requests[0]?.body).toMatchObject({
      model: "minimax/minimax-m2:free",
      max_completion_tokens: 10,
      stream_options: { include_usage: true },
    });
    expect(events.some((e) => e.type === "reasoning_delta")).toBe(true);
    expect(terminal(events)).toMatchObject({ stopReason: "max_tokens" });
    // The recorded counts say 11 reasoning tokens of 10 output: known, but malformed, so never priced.
    expect(usageEvidence(events)).toMatchObject({
      status: "unpriced",
      upstream: "minimax",
      usage: { inputTokens: 43, outputTokens: 10 },
    });
  });

  it("an error chunk that ends a stream keeps the billed usage it carried as the call's evidence", async () => {
    const [exchange] = cassette("openrouter/test_openrouter_stream_error.yaml");
    // The recording without its finish reason: the error is then a failure of the call.
    const body = (exchange?.response.body?.string ?? "").replaceAll(
      '_reason":"length"',
      '_reason":null',
    );
    expect(body).not.toContain('"finish_reason":"length"');
    server.enqueue({ body });
    const dispatch = client().streamEvidence(
      baseRequest("minimax/minimax-m2:free", { maxOutputTokens: 10 }),
      new AbortController().signal,
    );
    const seen: string[] = [];
    const failure = await (async () => {
      for await (const e of dispatch.events) seen.push(e.type);
    })().catch((e: unknown) => e);
    expect(failure).toMatchObject({
      kind: "provider_error",
      provider: "openrouter",
      retryable: false,
    });
    expect(String((failure as Error).message)).toContain("Token limit reached");
    expect(seen).not.toContain("response_completed");
    expect(await dispatch.evidence).toMatchObject({
      status: "unpriced",
      upstream: "minimax",
      usage: { inputTokens: 43, outputTokens: 10 },
    });
  });

  it("maps an upstream 429 body, without a rejection proof", async () => {
    const [exchange] = cassette("openrouter/test_openrouter_errors_raised.yaml");
    server.enqueue({
      status: 429,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(exchange?.response.parsed_body),
    });
    const { error } = await collectError(client(), baseRequest("google/gemini-2.0-flash-exp:free"));
    expect(error).toMatchObject({
      kind: "rate_limited",
      status: 429,
      retryable: true,
      provider: "openrouter",
    });
    expect(error.rejection).toBeUndefined();
  });

  it("classifies 402 by whether it says when to retry", async () => {
    const body = JSON.stringify({ error: { code: 402, message: "Insufficient credits" } });
    server.enqueue({ status: 402, body }, { status: 402, headers: { "retry-after": "3" }, body });
    expect((await collectError(client(), baseRequest("x/y"))).error).toMatchObject({
      kind: "invalid_request",
      retryable: false,
    });
    expect((await collectError(client(), baseRequest("x/y"))).error).toMatchObject({
      kind: "rate_limited",
      retryable: true,
      retryAfterMs: 3000,
    });
  });

  it("refuses explicit cache controls", () => {
    expect(() =>
      client().validate(baseRequest("anthropic/claude-sonnet-4.6", { cache: { ttl: "5m" } })),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
  });
});
