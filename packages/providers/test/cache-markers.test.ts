import { type Msg, priceUsage } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_PRICES, createAnthropicClient } from "../src/index.js";
import {
  assistantMessage,
  baseRequest,
  collect,
  terminal,
  usageEvidence,
  userText,
} from "./helpers/collect.js";
import { toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Issue 19, finding 7 (Anthropic cache markers in agent loops), on documented traffic: a breakpoint
 * looks back about 20 blocks for an earlier entry (platform.claude.com prompt-caching, "How
 * automatic prefix checking works"), at most 4 breakpoints, longer TTLs before shorter ones.
 */
const server = serverPerTest();
const client = () => createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
const MODEL = "claude-sonnet-4-5";
const CITIES = Array.from({ length: 12 }, (_, i) => `city-${i + 1}`);
const weather = {
  name: "get_weather",
  description: "Weather for a city",
  inputSchema: { type: "object", properties: { city: { type: "string" } } },
};
const system = [{ type: "text" as const, text: "You are a weather desk. ".repeat(40) }];

/** A documented-shape stream: `n` parallel tool calls, and usage with the 5m / 1h write split. */
function parallelCalls(split: { w5: number; w1: number } | undefined): string {
  const lines: object[] = [
    {
      type: "message_start",
      message: {
        id: "msg_p",
        type: "message",
        role: "assistant",
        model: MODEL,
        content: [],
        stop_reason: null,
        usage: {
          input_tokens: 20,
          output_tokens: 1,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: split ? split.w5 + split.w1 : 3500,
          ...(split
            ? {
                cache_creation: {
                  ephemeral_5m_input_tokens: split.w5,
                  ephemeral_1h_input_tokens: split.w1,
                },
              }
            : {}),
        },
      },
    },
  ];
  CITIES.forEach((city, index) => {
    lines.push({
      type: "content_block_start",
      index,
      content_block: { type: "tool_use", id: `toolu_${index + 1}`, name: "get_weather", input: {} },
    });
    lines.push({
      type: "content_block_delta",
      index,
      delta: { type: "input_json_delta", partial_json: JSON.stringify({ city }) },
    });
    lines.push({ type: "content_block_stop", index });
  });
  lines.push(
    {
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 240 },
    },
    { type: "message_stop" },
  );
  return toSse(
    lines.map((l) => JSON.stringify(l)),
    { named: true },
  );
}
const ANSWER = toSse(
  [
    {
      type: "message_start",
      message: {
        id: "msg_a",
        type: "message",
        role: "assistant",
        model: MODEL,
        content: [],
        stop_reason: null,
        usage: {
          input_tokens: 5,
          output_tokens: 1,
          cache_read_input_tokens: 3500,
          cache_creation_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        },
      },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Mostly rain." } },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { output_tokens: 4 },
    },
    { type: "message_stop" },
  ].map((l) => JSON.stringify(l)),
  { named: true },
);

type Sent = {
  system: { cache_control?: unknown }[];
  messages: {
    role: string;
    content: { type: string; cache_control?: unknown; text?: string; tool_use_id?: string }[];
  }[];
};
const markers = (body: Sent) =>
  body.messages.flatMap((m, i) =>
    m.content.flatMap((c, j) =>
      c.cache_control
        ? [{ at: [i, j], type: c.type, ttl: (c.cache_control as { ttl: string }).ttl }]
        : [],
    ),
  );
const results = (): Msg => ({
  role: "user",
  blocks: CITIES.map((city, i) => ({
    type: "tool_result",
    callId: `toolu_${i + 1}`,
    name: "get_weather",
    output: `rain in ${city}`,
    isError: false,
  })),
});

describe("Anthropic cache markers in an agent loop", () => {
  it("a step of 12 parallel calls still reads the previous entry: a rolling mark on the previous tail; 1h prefix, 5m tail", async () => {
    server.enqueue({ body: parallelCalls({ w5: 1500, w1: 2000 }) }, { body: ANSWER });
    const base = baseRequest(MODEL, {
      system,
      tools: [weather],
      cache: { ttl: "1h", tailTtl: "5m" },
      messages: [userText("Weather in 12 cities?")],
    });
    const first = await collect(client(), base);
    expect(terminal(first).toolCalls).toHaveLength(12);
    const body1 = server.requests[0]?.body as Sent;
    expect(body1.system.at(-1)?.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
    expect(markers(body1)).toEqual([{ at: [0, 0], type: "text", ttl: "5m" }]);
    // Each write priced at its own row: 1,500 at the 5m rate, 2,000 at the 1h rate.
    const evidence = usageEvidence(first);
    expect(evidence).toMatchObject({
      status: "known",
      usage: { cacheWrite5mTokens: 1500, cacheWrite1hTokens: 2000 },
    });
    const usage = (evidence as { usage: Parameters<typeof priceUsage>[2] }).usage;
    expect(priceUsage(ANTHROPIC_PRICES, MODEL, usage)).toMatchObject({
      status: "priced",
      usdMicros: 20 * 3 + 240 * 15 + 1500 * 3.75 + 2000 * 6,
    });

    const next = {
      ...base,
      messages: [...base.messages, assistantMessage(first, "anthropic", MODEL), results()],
    };
    const second = await collect(client(), next);
    expect(terminal(second).stopReason).toBe("end_turn");
    const body2 = server.requests[1]?.body as Sent;
    // 24 blocks were added since the previous tail: beyond the ~20-block lookback of the new tail alone.
    expect(body2.messages[1]?.content).toHaveLength(12);
    expect(body2.messages[2]?.content).toHaveLength(12);
    expect(markers(body2)).toEqual([
      { at: [0, 0], type: "text", ttl: "5m" },
      { at: [2, 11], type: "tool_result", ttl: "5m" },
    ]);
    expect(body2.system.at(-1)?.cache_control).toEqual({ type: "ephemeral", ttl: "1h" });
  });

  it("the tail marker skips a harness notice only that request carries", async () => {
    server.enqueue({ body: ANSWER });
    const notice = {
      type: "text" as const,
      text: "This is your last step: answer now.",
      origin: "harness" as const,
    };
    const toolTurn: Msg = {
      role: "assistant",
      blocks: CITIES.slice(0, 2).map((city, i) => ({
        type: "tool_call" as const,
        id: `toolu_${i + 1}`,
        name: "get_weather",
        input: { city },
      })),
    };
    const lastResults: Msg = { role: "user", blocks: [...results().blocks.slice(0, 2), notice] };
    await collect(
      client(),
      baseRequest(MODEL, {
        system,
        tools: [weather],
        cache: { ttl: "5m" },
        messages: [userText("Weather?"), toolTurn, lastResults],
      }),
    );
    const body = server.requests[0]?.body as Sent;
    expect(body.messages[2]?.content.at(-1)).toEqual({ type: "text", text: notice.text });
    expect(markers(body)).toEqual([
      { at: [0, 0], type: "text", ttl: "5m" },
      { at: [2, 1], type: "tool_result", ttl: "5m" },
    ]);
  });

  it("two durations without the usage split are unpriced; a 1h tail after a 5m prefix is refused before I/O", async () => {
    server.enqueue({ body: parallelCalls(undefined) });
    const events = await collect(
      client(),
      baseRequest(MODEL, { system, tools: [weather], cache: { ttl: "1h", tailTtl: "5m" } }),
    );
    expect(usageEvidence(events)).toMatchObject({
      status: "unpriced",
      reason: expect.stringContaining("TTL split"),
    });
    expect(() =>
      client().validate(baseRequest(MODEL, { cache: { ttl: "5m", tailTtl: "1h" } })),
    ).toThrow(expect.objectContaining({ kind: "unsupported" }));
    expect(server.requests).toHaveLength(1);
  });
});
