import type { ModelClient } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import {
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAICompatibleClient,
  createOpenAIResponsesClient,
} from "../src/index.js";
import { baseRequest, collect, collectError } from "./helpers/collect.js";
import { ANTHROPIC_TEXT, cassette, chunkLines, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const anthropic = (): ModelClient =>
  createAnthropicClient({
    apiKey: "k",
    baseURL: `${server.url}/v1`,
    now: () => Date.parse("2026-11-29T10:00:00Z"),
  });
const openai = (): ModelClient =>
  createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` });
const json = { "content-type": "application/json" };
const anthropicError = (type: string, message: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: "error", error: { type, message, ...extra }, request_id: "req_1" });

async function failure(
  client: ModelClient,
  status: number,
  body: string,
  headers: Record<string, string> = {},
) {
  server.enqueue({ status, headers: { ...json, ...headers }, body });
  return (await collectError(client, baseRequest("claude-haiku-4-5"))).error;
}

describe("HTTP errors are classified once, at the adapter", () => {
  it("429 → rate_limited with retry-after and an Anthropic rejection proof", async () => {
    const error = await failure(
      anthropic(),
      429,
      anthropicError("rate_limit_error", "Too many requests"),
      { "retry-after": "7" },
    );
    expect(error).toMatchObject({
      kind: "rate_limited",
      status: 429,
      retryable: true,
      retryAfterMs: 7000,
      provider: "anthropic",
    });
    expect(error.rejection).toEqual({
      kind: "anthropic_rate_limit_v1",
      provider: "anthropic",
      status: 429,
    });
    expect(error.code).toBe("provider_rate_limited");
  });

  it("reads retry-after-ms first, and an HTTP date against the injected clock", async () => {
    expect(
      await failure(anthropic(), 429, anthropicError("rate_limit_error", "x"), {
        "retry-after-ms": "250",
        "retry-after": "9",
      }),
    ).toMatchObject({ retryAfterMs: 250 });
    expect(
      await failure(anthropic(), 429, anthropicError("rate_limit_error", "x"), {
        "retry-after": "Sun, 29 Nov 2026 10:00:30 GMT",
      }),
    ).toMatchObject({ retryAfterMs: 30000 });
  });

  it("a spend-limit 429 is not retryable and carries no proof", async () => {
    const error = await failure(
      anthropic(),
      429,
      anthropicError("rate_limit_error", "limit", {
        details: { error_code: "enforced_spend_limit_reached" },
      }),
    );
    expect(error).toMatchObject({ kind: "rate_limited", retryable: false });
    expect(error.rejection).toBeUndefined();
  });

  it("529 → overloaded with its proof; 500 → server, retryable, no proof", async () => {
    const overloaded = await failure(
      anthropic(),
      529,
      anthropicError("overloaded_error", "Overloaded"),
    );
    expect(overloaded).toMatchObject({ kind: "overloaded", status: 529, retryable: true });
    expect(overloaded.rejection).toEqual({
      kind: "anthropic_overloaded_v1",
      provider: "anthropic",
      status: 529,
    });
    const server500 = await failure(anthropic(), 500, anthropicError("api_error", "Internal"));
    expect(server500).toMatchObject({ kind: "server", status: 500, retryable: true });
    expect(server500.rejection).toBeUndefined();
    expect(await failure(anthropic(), 503, "<html>bad gateway</html>")).toMatchObject({
      kind: "server",
      status: 503,
    });
  });

  it("400 prompt too long → context_window; the recorded effort 400 → invalid_request", async () => {
    expect(
      await failure(
        anthropic(),
        400,
        anthropicError(
          "invalid_request_error",
          "prompt is too long: 208310 tokens > 200000 maximum",
        ),
      ),
    ).toMatchObject({
      kind: "context_window",
      retryable: false,
    });
    const [recorded] = cassette(
      "anthropic/test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml",
    );
    const error = await failure(anthropic(), 400, JSON.stringify(recorded?.response.parsed_body));
    expect(error).toMatchObject({ kind: "invalid_request", status: 400, retryable: false });
    expect(error.message).toContain("effort level 'xhigh'");
  });

  it("401/403 → auth; the recorded 404 → not_found", async () => {
    expect(
      await failure(anthropic(), 401, anthropicError("authentication_error", "invalid x-api-key")),
    ).toMatchObject({ kind: "auth", status: 401 });
    expect(await failure(anthropic(), 403, anthropicError("permission_error", "no"))).toMatchObject(
      { kind: "auth", status: 403 },
    );
    const [recorded] = cassette("anthropic/test_anthropic_count_tokens_error.yaml");
    expect(
      await failure(anthropic(), 404, JSON.stringify(recorded?.response.parsed_body)),
    ).toMatchObject({ kind: "not_found", status: 404, retryable: false });
  });

  it("OpenAI: 429 rate limit carries openai_rate_limit_v1; insufficient_quota does not and is final", async () => {
    const limited = await failure(
      openai(),
      429,
      JSON.stringify({
        error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" },
      }),
    );
    expect(limited).toMatchObject({ kind: "rate_limited", retryable: true, provider: "openai" });
    expect(limited.rejection).toEqual({
      kind: "openai_rate_limit_v1",
      provider: "openai",
      status: 429,
    });
    const quota = await failure(openai(), 429, chunkLines("openai/openai-error.1.json").join("\n"));
    expect(quota).toMatchObject({ kind: "rate_limited", retryable: false });
    expect(quota.rejection).toBeUndefined();
  });

  it("OpenAI: context_length_exceeded → context_window; the recorded 400 → invalid_request", async () => {
    expect(
      await failure(
        openai(),
        400,
        JSON.stringify({
          error: {
            message: "This model's maximum context length is 128000 tokens.",
            code: "context_length_exceeded",
          },
        }),
      ),
    ).toMatchObject({
      kind: "context_window",
    });
    const [recorded] = cassette("openai/test_openai_responses_model_http_error.yaml");
    const responses = createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    expect(
      await failure(responses, 400, JSON.stringify(recorded?.response.parsed_body)),
    ).toMatchObject({ kind: "invalid_request", status: 400 });
  });

  it("an OpenAI-compatible server's 429 is rate_limited without a proof", async () => {
    const compat = createOpenAICompatibleClient({ baseURL: `${server.url}/v1` });
    const error = await failure(compat, 429, JSON.stringify({ error: { message: "busy" } }));
    expect(error).toMatchObject({ kind: "rate_limited", provider: "openai-compatible" });
    expect(error.rejection).toBeUndefined();
  });
});

describe("errors inside a 200 stream", () => {
  const start = JSON.stringify({
    type: "message_start",
    message: { id: "m", usage: { input_tokens: 10, output_tokens: 1 } },
  });
  const block = JSON.stringify({
    type: "content_block_start",
    index: 0,
    content_block: { type: "text", text: "" },
  });
  const delta = JSON.stringify({
    type: "content_block_delta",
    index: 0,
    delta: { type: "text_delta", text: "Hel" },
  });
  const overloaded = JSON.stringify({
    type: "error",
    error: { type: "overloaded_error", message: "Overloaded" },
  });

  it("an overloaded_error after content → overloaded, no proof, content already streamed", async () => {
    server.enqueue({ body: toSse([start, block, delta, overloaded], { named: true }) });
    const { error, events } = await collectError(anthropic(), baseRequest("claude-haiku-4-5"));
    expect(events).toEqual([{ type: "text_delta", text: "Hel" }]);
    expect(error).toMatchObject({ kind: "overloaded", retryable: true });
    expect(error.status).toBeUndefined();
    expect(error.rejection).toBeUndefined();
  });

  it("an overloaded_error before anything → overloaded with the pre-stream proof", async () => {
    server.enqueue({ body: toSse([overloaded], { named: true }) });
    const { error } = await collectError(anthropic(), baseRequest("claude-haiku-4-5"));
    expect(error.rejection).toEqual({
      kind: "anthropic_overloaded_v1",
      provider: "anthropic",
      status: 529,
    });
  });

  it("an unknown error type mid-stream → provider_error", async () => {
    server.enqueue({
      body: toSse(
        [start, JSON.stringify({ type: "error", error: { type: "weird_error", message: "?" } })],
        { named: true },
      ),
    });
    expect((await collectError(anthropic(), baseRequest("claude-haiku-4-5"))).error).toMatchObject({
      kind: "provider_error",
    });
  });

  it("a body that ends before the terminal frame → stream_torn", async () => {
    server.enqueue({ body: toSse([start, block, delta], { named: true }) });
    expect((await collectError(anthropic(), baseRequest("claude-haiku-4-5"))).error).toMatchObject({
      kind: "stream_torn",
      provider: "anthropic",
    });
    const chat = chunkLines("openai/openai-text.chunks.txt").slice(0, 5);
    server.enqueue({ body: toSse(chat, { named: false }) });
    expect((await collectError(openai(), baseRequest("gpt-4.1-nano"))).error).toMatchObject({
      kind: "stream_torn",
      provider: "openai",
    });
  });

  it("a payload that is not JSON → stream_invalid", async () => {
    server.enqueue({ body: "event: message_start\ndata: {not json\n\n" });
    expect((await collectError(anthropic(), baseRequest("claude-haiku-4-5"))).error).toMatchObject({
      kind: "stream_invalid",
    });
  });

  it("a chat chunk with an error object → classified by its code", async () => {
    server.enqueue({
      body: toSse([JSON.stringify({ error: { code: 502, message: "upstream failed" } })], {
        named: false,
      }),
    });
    expect((await collectError(openai(), baseRequest("gpt-4.1"))).error).toMatchObject({
      kind: "server",
      status: 502,
    });
  });
});

describe("transport failures", () => {
  it("no HTTP answer → network", async () => {
    const url = server.url;
    await server.close();
    const client = createOpenAIChatClient({ apiKey: "k", baseURL: `${url}/v1` });
    const { error } = await collectError(client, baseRequest("gpt-4.1"));
    expect(error).toMatchObject({ kind: "network", retryable: true, provider: "openai" });
  });

  it("an injected fetch is used, and its failure is a network error", async () => {
    const calls: string[] = [];
    const client = createAnthropicClient({
      fetch: async (url) => {
        calls.push(url);
        throw new TypeError("fetch failed");
      },
    });
    expect((await collectError(client, baseRequest("claude-haiku-4-5"))).error).toMatchObject({
      kind: "network",
    });
    expect(calls).toEqual(["https://api.anthropic.com/v1/messages"]);
  });

  it("usage in a completed stream survives an unrelated trailing event", async () => {
    server.enqueue({ body: ANTHROPIC_TEXT + "event: ping\ndata: {}\n\n" });
    const events = await collect(anthropic(), baseRequest("claude-haiku-4-5"));
    expect(events.at(-1)?.type).toBe("response_completed");
  });
});
