import type { ModelStreamEvent } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createAnthropicClient } from "../src/index.js";
import {
  assistantMessage,
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

const client = () => createAnthropicClient({ apiKey: "test-key", baseURL: `${server.url}/v1` });
const request = (overrides = {}) => baseRequest("claude-sonnet-4-5", overrides);
const sse = (name: string) => toSse(chunkLines(`anthropic/${name}`), { named: true });

/** Splits a multi-message chunks file into one SSE body per message. */
function messages(name: string): string[] {
  const out: string[][] = [];
  for (const line of chunkLines(`anthropic/${name}`)) {
    if (line.includes('"type":"message_start"')) out.push([]);
    out.at(-1)?.push(line);
  }
  return out.map((lines) => toSse(lines, { named: true }));
}

function checkContract(events: readonly ModelStreamEvent[]): void {
  const end = terminal(events);
  expect(events.filter((e) => e.type === "response_completed")).toHaveLength(1);
  expect(end.text).toBe(textOfEvents(events));
  expect(end.toolCalls).toEqual(
    events
      .filter((e) => e.type === "tool_call")
      .map(({ id, name, arguments: a }) => ({ id, name, arguments: a })),
  );
  const firstCall = events.findIndex((e) => e.type === "tool_call");
  if (firstCall >= 0)
    expect(events.slice(firstCall).some((e) => e.type === "text_delta")).toBe(false);
  for (const e of events) if (e.type === "text_delta") expect(e.text.length).toBeGreaterThan(0);
}

describe("Anthropic stream, recorded traffic over a local socket", () => {
  it("streams plain text split at awkward byte boundaries, with cache usage split by TTL", async () => {
    server.enqueue({ body: sse("anthropic-text.chunks.txt"), split: "awkward" });
    const events = await collect(client(), request());
    checkContract(events);
    expect(textOfEvents(events)).toBe(
      "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?",
    );
    expect(terminal(events).stopReason).toBe("end_turn");
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 12,
        outputTokens: 30,
        cacheWrite5mTokens: 0,
        cacheWrite1hTokens: 0,
        cacheReadTokens: 0,
        serviceTier: "standard",
      },
    });
    expect(terminal(events).usage).toEqual((usageEvidence(events) as { usage: unknown }).usage);
  });

  it("decodes a chunk boundary inside a UTF-8 sequence (÷) in thinking and text", async () => {
    const body = Buffer.from(sse("anthropic-clear-thinking.1.chunks.txt"), "utf8");
    const cuts: number[] = [];
    for (let at = body.indexOf("÷"); at >= 0; at = body.indexOf("÷", at + 1)) cuts.push(at + 1);
    expect(cuts.length).toBeGreaterThan(1);
    server.enqueue({ body, split: cuts });
    const events = await collect(client(), request());
    checkContract(events);
    const reasoning = events.filter((e) => e.type === "reasoning_delta");
    expect(reasoning.map((e) => e.text).join("")).toBe(
      "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
    );
    expect(reasoning.at(-1)).toMatchObject({
      text: "",
      signature: expect.stringMatching(/^EvQBCkYI/),
    });
    expect(textOfEvents(events)).toBe("925 ÷ 5 = 185");
  });

  it("reads raw SSE with event lines and space-padded JSON; releases a tool call at block stop", async () => {
    server.enqueue({ body: readFixture("anthropic/tool_use_response.txt"), split: "awkward" });
    const events = await collect(client(), request());
    checkContract(events);
    expect(terminal(events)).toMatchObject({
      stopReason: "tool_use",
      text: "I'll check the current weather in Paris for you.",
      toolCalls: [
        {
          id: "toolu_01NRLabsLyVHZPKxbKvkfSMn",
          name: "get_weather",
          arguments: '{"location": "Paris"}',
        },
      ],
    });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: {
        inputTokens: 377,
        outputTokens: 65,
        cacheReadTokens: 0,
        cacheWrite5mTokens: 0,
        cacheWrite1hTokens: 0,
        serviceTier: "standard",
      },
    });
  });

  it("never releases a tool call cut by max_tokens", async () => {
    server.enqueue({ body: readFixture("anthropic/incomplete_partial_json_response.txt") });
    const events = await collect(client(), request());
    checkContract(events);
    expect(terminal(events).stopReason).toBe("max_tokens");
    expect(terminal(events).toolCalls).toEqual([]);
    expect(events.some((e) => e.type === "tool_call")).toBe(false);
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 450, outputTokens: 124 },
    });
  });

  it("gives a no-argument tool call the arguments {}", async () => {
    server.enqueue({ body: sse("anthropic-tool-no-args.chunks.txt") });
    const events = await collect(client(), request());
    checkContract(events);
    expect(terminal(events).toolCalls).toEqual([
      { id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", name: "updateIssueList", arguments: "{}" },
    ]);
  });

  it("streams thinking deltas and closes the block with its signature", async () => {
    const [exchange] = cassette("anthropic/test_anthropic_model_thinking_part_stream.yaml");
    server.enqueue({ body: exchange?.response.body?.string ?? "", split: "awkward" });
    const events = await collect(client(), request());
    checkContract(events);
    const reasoning = events.filter((e) => e.type === "reasoning_delta");
    expect(reasoning.length).toBeGreaterThan(2);
    expect(reasoning.filter((e) => e.signature)).toHaveLength(1);
    expect(reasoning.at(-1)?.signature?.length).toBeGreaterThan(100);
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 43, outputTokens: 282 },
    });
  });

  it("passes redacted thinking through whole, for replay", async () => {
    const [exchange] = cassette(
      "anthropic/test_anthropic_model_thinking_part_redacted_stream.yaml",
    );
    server.enqueue({ body: exchange?.response.body?.string ?? "" });
    const events = await collect(client(), request());
    checkContract(events);
    const redacted = events.filter((e) => e.type === "reasoning_delta" && e.redacted);
    expect(redacted).toHaveLength(2);
    expect(redacted[0]).toMatchObject({
      text: "",
      redacted: expect.stringMatching(/^EqkECkYIBxgC/),
    });
    expect(textOfEvents(events)).toMatch(/^I notice that you've sent/);
  });

  it("maps the web search server tool to provider tool events and counts searches", async () => {
    server.enqueue({ body: sse("anthropic-web-search-tool.1.chunks.txt"), split: "awkward" });
    const events = await collect(client(), request());
    checkContract(events);
    const call = events.find((e) => e.type === "provider_tool_call");
    const result = events.find((e) => e.type === "provider_tool_result");
    expect(call).toMatchObject({
      provider: "anthropic",
      id: "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k",
      name: "web_search",
      payload: {
        type: "server_tool_use",
        id: "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k",
        name: "web_search",
        input: { query: "tech news today September 26 2025" },
      },
    });
    expect(result).toMatchObject({
      provider: "anthropic",
      callId: "srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k",
      name: "web_search",
      payload: { type: "web_search_tool_result" },
    });
    expect((result as { resultCount: number }).resultCount).toBeGreaterThan(0);
    expect(events.indexOf(call as ModelStreamEvent)).toBeLessThan(
      events.findIndex((e) => e.type === "text_delta"),
    );
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 15665, outputTokens: 795, webSearchRequests: 1 },
    });
  });

  it("handles tool search server blocks, and a deferred result opening the next message", async () => {
    const [first, second, third] = messages("anthropic-tool-search-deferred-regex.chunks.txt");
    server.enqueue({ body: first ?? "" }, { body: second ?? "" }, { body: third ?? "" });
    const one = await collect(client(), request());
    checkContract(one);
    expect(terminal(one).stopReason).toBe("tool_use");
    expect(
      one.some(
        (e) => e.type === "provider_tool_call" && e.name.startsWith("tool_search_tool_regex"),
      ),
    ).toBe(true);
    const two = await collect(client(), request());
    checkContract(two);
    const call = one.find((e) => e.type === "provider_tool_call");
    const deferred = two.find((e) => e.type === "provider_tool_result");
    // The call streamed in the previous message: the result is linked by id, named by its block type.
    expect(deferred).toMatchObject({
      callId: (call as { id: string }).id,
      name: "tool_search",
      payload: { type: "tool_search_tool_result" },
    });
    const three = await collect(client(), request());
    expect(terminal(three).stopReason).toBe("end_turn");
  });

  /**
   * The recording client re-serialized server blocks (dropping `caller`, normalizing quotes in
   * titles); what must survive a replay is the sequence of blocks and their opaque data.
   */
  function replayProjection(messages: unknown): unknown {
    return (messages as { role: string; content: Record<string, unknown>[] }[]).map((m) => ({
      role: m.role,
      content: m.content.map((b) => ({
        type: b.type,
        text: b.text,
        thinking: b.thinking,
        signature: b.signature,
        id: b.id,
        input: b.input,
        tool_use_id: b.tool_use_id,
        results: Array.isArray(b.content)
          ? (b.content as Record<string, unknown>[]).map((r) => [r.url, r.encrypted_content])
          : undefined,
      })),
    }));
  }

  it("replays a pause_turn answer verbatim: the continuation carries the recorded blocks and opaque data", async () => {
    const [first, second] = cassette("anthropic/test_pause_turn_web_search_streaming_vcr.yaml");
    server.enqueue(
      { body: first?.response.body?.string ?? "", split: "awkward" },
      { body: second?.response.body?.string ?? "" },
    );
    const recorded = first?.request.parsed_body as {
      messages: { content: { text: string }[] }[];
      max_tokens: number;
    };
    const prompt = recorded.messages[0]?.content[0]?.text ?? "";
    const base = request({
      model: "claude-sonnet-4-5",
      maxOutputTokens: 15000,
      reasoning: "medium" as const,
      providerTools: [{ kind: "web_search" as const, maxSensitivity: "internal" as const }],
      messages: [userText(prompt)],
    });
    const events = await collect(client(), base);
    checkContract(events);
    expect(terminal(events).stopReason).toBe("pause_turn");
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { webSearchRequests: 10 },
    });
    const continued = await collect(client(), {
      ...base,
      messages: [...base.messages, assistantMessage(events, "anthropic", base.model)],
    });
    expect(terminal(continued).stopReason).toBe("end_turn");
    const sent = server.requests[1]?.body as { messages: unknown[] };
    expect(replayProjection(sent.messages)).toEqual(
      replayProjection((second!.request.parsed_body as { messages: unknown[] }).messages),
    );
    expect(JSON.stringify(sent.messages)).toContain('"caller":{"type":"direct"}');
  });
});
