import type { ModelRequest } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createOpenAIResponsesClient } from "../src/index.js";
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
import { cassette, chunkLines, toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const client = () =>
  createOpenAIResponsesClient({ apiKey: "sk-test", baseURL: `${server.url}/v1` });

/** The recorded file holds four responses back to back. */
function responses(name: string): string[] {
  const out: string[][] = [];
  for (const line of chunkLines(name)) {
    if (line.includes('"type":"response.created"')) out.push([]);
    out.at(-1)?.push(line);
  }
  return out.map((lines) => toSse(lines, { named: true }));
}

describe("OpenAI Responses, recorded traffic", () => {
  it("streams reasoning summaries, closes reasoning with its item id and encrypted content, releases the call", async () => {
    const [first] = responses("openai/openai-reasoning-encrypted-content.1.chunks.txt");
    server.enqueue({ body: first ?? "", split: "awkward" });
    const events = await collect(client(), baseRequest("gpt-5.1-codex-max"));
    const reasoning = events.filter((e) => e.type === "reasoning_delta");
    expect(reasoning.map((e) => e.text).join("")).toMatch(
      /^\*\*Calculating step-by-step using calculator\*\*/,
    );
    expect(reasoning.at(-1)).toMatchObject({
      text: "",
      signature: "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9",
      redacted: expect.stringMatching(/^gAAAAA/),
    });
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      toolCalls: [
        {
          id: expect.stringMatching(/^call_AB6AaRZ1/),
          name: expect.any(String),
          arguments: '{"a":12,"b":7,"op":"add"}',
        },
      ],
    });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 134,
        outputTokens: 28,
        cacheReadTokens: 0,
        reasoningTokens: 0,
        serviceTier: "standard",
      },
    });
  });

  it("replays reasoning items, calls and outputs statelessly", async () => {
    const [first, second] = responses("openai/openai-reasoning-encrypted-content.1.chunks.txt");
    server.enqueue({ body: first ?? "" }, { body: second ?? "" });
    const tool = { name: "calculator", description: "Calculate", inputSchema: { type: "object" } };
    const request: ModelRequest = {
      ...baseRequest("gpt-5.1-codex-max"),
      tools: [tool],
      reasoning: "low",
      system: [{ type: "text", text: "Use the tool." }],
    };
    const events = await collect(client(), request);
    const answer = assistantMessage(events, "openai", request.model);
    const call = terminal(events).toolCalls[0];
    await collect(client(), {
      ...request,
      messages: [
        ...request.messages,
        answer,
        {
          role: "user",
          blocks: [
            {
              type: "tool_result",
              callId: call?.id ?? "",
              name: "calculator",
              output: 19,
              isError: false,
            },
          ],
        },
      ],
    });
    const body = server.requests[1]?.body as Record<string, unknown>;
    const reasoning = answer.blocks[0] as { signature: string; redacted: string; text: string };
    expect(body).toEqual({
      model: "gpt-5.1-codex-max",
      instructions: "Use the tool.",
      input: [
        { role: "user", content: [{ type: "input_text", text: "Hello" }] },
        {
          type: "reasoning",
          id: reasoning.signature,
          encrypted_content: reasoning.redacted,
          summary: [{ type: "summary_text", text: reasoning.text }],
        },
        { type: "function_call", call_id: call?.id, name: call?.name, arguments: call?.arguments },
        { type: "function_call_output", call_id: call?.id, output: "19" },
      ],
      stream: true,
      store: false,
      max_output_tokens: 1024,
      tools: [
        {
          type: "function",
          name: "calculator",
          description: "Calculate",
          parameters: { type: "object" },
          strict: false,
        },
      ],
      reasoning: { effort: "low", summary: "auto" },
      include: ["reasoning.encrypted_content"],
    });
    expect(server.requests[1]?.path).toBe("/v1/responses");
  });

  it("reads a reasoning + function call stream with flex tier usage", async () => {
    const [exchange] = cassette("openai/test_openai_responses_streaming_usage.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    const events = await collect(client(), baseRequest("gpt-5"));
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      toolCalls: [
        { id: "call_CWXgs68YprAjp6t0371hiPOI", name: "final_result", arguments: '{"result":6666}' },
      ],
    });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 53,
        outputTokens: 469,
        cacheReadTokens: 0,
        reasoningTokens: 448,
        serviceTier: "flex",
      },
    });
  });

  it("maps web_search_call items to provider tool events, counts searches, and replays the call item", async () => {
    const [exchange] = cassette("openai/test_openai_responses_model_web_search_tool_stream.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "", split: "awkward" });
    const request = baseRequest("gpt-5", {
      providerTools: [{ kind: "web_search", maxSensitivity: "internal", maxUses: 2 }],
    });
    const events = await collect(client(), request);
    const call = events.find((e) => e.type === "provider_tool_call");
    expect(call).toMatchObject({
      provider: "openai",
      name: "web_search",
      payload: {
        type: "web_search_call",
        action: { type: "search", query: "weather: San Francisco, CA" },
      },
    });
    expect(events.find((e) => e.type === "provider_tool_result")).toMatchObject({
      name: "web_search",
      resultCount: 1,
    });
    expect(textOfEvents(events)).toMatch(/^San Francisco weather today/);
    expect(terminal(events).stopReason).toBe("end_turn");
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 1143,
        outputTokens: 582,
        cacheReadTokens: 8320,
        reasoningTokens: 512,
        webSearchRequests: 1,
        serviceTier: "standard",
      },
    });
    expect(server.requests[0]?.body).toMatchObject({
      tools: [{ type: "web_search" }],
      max_tool_calls: 2,
      include: ["reasoning.encrypted_content", "web_search_call.action.sources"],
    });
    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    await collect(client(), {
      ...request,
      messages: [
        ...request.messages,
        assistantMessage(events, "openai", request.model),
        userText("And tomorrow?"),
      ],
    });
    const input = (server.requests[1]!.body as { input: { type?: string }[] }).input;
    expect(input.map((i) => i.type ?? "message")).toEqual([
      "message",
      "reasoning",
      "web_search_call",
      "reasoning",
      "message",
      "message",
    ]);
    expect(input[2]).toEqual((call as { payload: unknown }).payload);
  });

  it("sends the loop's resolved bytes as an input_image data URL and an input_file", async () => {
    const [first] = responses("openai/openai-reasoning-encrypted-content.1.chunks.txt");
    server.enqueue({ body: first ?? "" });
    const request = baseRequest("gpt-4.1", {
      messages: [
        {
          role: "user",
          blocks: [
            {
              type: "media",
              kind: "image",
              ref: "media:1",
              contentType: "image/jpeg",
              data: "/9j/4AAQ",
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
    expect(() => client().validate(request)).not.toThrow();
    await collect(client(), request);
    expect(server.requests[0]?.body).toMatchObject({
      input: [
        {
          role: "user",
          content: [
            { type: "input_image", image_url: "data:image/jpeg;base64,/9j/4AAQ", detail: "auto" },
            {
              type: "input_file",
              file_data: "data:application/pdf;base64,JVBERi0=",
              filename: "document-1.pdf",
            },
          ],
        },
      ],
    });
    expect(JSON.stringify(server.requests[0]?.body)).not.toContain("media:1");
    const word = baseRequest("gpt-4.1", {
      messages: [
        {
          role: "user",
          blocks: [
            {
              type: "media",
              kind: "document",
              ref: "media:3",
              contentType: "application/msword",
              data: "AAAA",
            },
          ],
        },
      ],
    });
    expect(() => client().validate(word)).toThrow(expect.objectContaining({ kind: "unsupported" }));
  });

  it("sends media and JSON schema output in Responses shapes", async () => {
    const [first] = responses("openai/openai-reasoning-encrypted-content.1.chunks.txt");
    server.enqueue({ body: first ?? "" });
    const schema = { type: "object", properties: { n: { type: "number" } } };
    await collect(
      client(),
      baseRequest("gpt-4.1", {
        output: { name: "number", schema },
        serviceTier: "priority",
        temperature: 0.7,
        messages: [
          {
            role: "user",
            blocks: [
              {
                type: "media",
                kind: "image",
                ref: "https://example.com/a.png",
                contentType: "image/png",
              },
              {
                type: "media",
                kind: "document",
                ref: "https://example.com/a.pdf",
                contentType: "application/pdf",
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
      }),
    );
    expect(server.requests[0]?.body).toMatchObject({
      input: [
        {
          role: "user",
          content: [
            { type: "input_image", image_url: "https://example.com/a.png", detail: "auto" },
            { type: "input_file", file_url: "https://example.com/a.pdf" },
            {
              type: "input_file",
              file_data: "data:application/pdf;base64,JVBERi0=",
              filename: "document-2.pdf",
            },
          ],
        },
      ],
      text: { format: { type: "json_schema", name: "number", schema, strict: false } },
      service_tier: "priority",
      temperature: 0.7,
    });
    expect((server.requests[0]!.body as Record<string, unknown>).include).toBeUndefined();
  });

  it("throws the in-stream error event (insufficient quota: not retryable, no proof)", async () => {
    server.enqueue({
      body: toSse(chunkLines("openai/openai-error.1.chunks.txt"), { named: true }),
    });
    const { error, events } = await collectError(client(), baseRequest("gpt-5-nano"));
    expect(events).toEqual([]);
    expect(error).toMatchObject({ kind: "rate_limited", retryable: false, provider: "openai" });
    expect(error.rejection).toBeUndefined();
  });

  it("maps response.incomplete to max_tokens", async () => {
    const lines = [
      { type: "response.created", response: { status: "in_progress" } },
      { type: "response.output_text.delta", item_id: "m", delta: "Partial" },
      {
        type: "response.incomplete",
        response: {
          status: "incomplete",
          incomplete_details: { reason: "max_output_tokens" },
          usage: { input_tokens: 3, output_tokens: 4 },
        },
      },
    ].map((l) => JSON.stringify(l));
    server.enqueue({ body: toSse(lines, { named: true }) });
    const events = await collect(client(), baseRequest("gpt-4.1"));
    expect(terminal(events)).toMatchObject({ stopReason: "max_tokens", text: "Partial" });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: { inputTokens: 3, outputTokens: 4 },
    });
  });
});
