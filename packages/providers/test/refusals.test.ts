import type { ModelStreamEvent } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { createAnthropicClient, createOpenAIResponsesClient } from "../src/index.js";
import { baseRequest, collect, terminal, usageEvidence } from "./helpers/collect.js";
import { toSse } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Issue 19, finding 3, on documented traffic: Anthropic's streaming refusal (stop_reason `refusal`
 * with `stop_details` on `message_delta`, platform.claude.com handle-streaming-refusals) and the
 * Responses `refusal` content part (`response.refusal.delta`, provider-wire §3).
 */
const server = serverPerTest();

const EXPLANATION = "This request was declined because it could enable cyber harm.";

function anthropicRefusal(category: string | null): string {
  const lines = [
    {
      type: "message_start",
      message: {
        id: "msg_r",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        usage: { input_tokens: 10, output_tokens: 1 },
      },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "Sure, here is how" },
    },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: {
        stop_reason: "refusal",
        stop_sequence: null,
        stop_details: { type: "refusal", category, explanation: category ? EXPLANATION : null },
      },
      usage: { output_tokens: 5 },
    },
    { type: "message_stop" },
  ];
  return toSse(
    lines.map((l) => JSON.stringify(l)),
    { named: true },
  );
}

const refusalOf = (events: readonly ModelStreamEvent[]) => terminal(events).refusal;

describe("refusals (documented traffic)", () => {
  it("Anthropic: stop_reason refusal carries its category, never the explanation; usage is still known", async () => {
    server.enqueue({ body: anthropicRefusal("cyber"), split: "awkward" });
    const client = createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    const events = await collect(client, baseRequest("claude-sonnet-4-5"));
    expect(terminal(events)).toMatchObject({
      stopReason: "refusal",
      refusal: "cyber",
      text: "Sure, here is how",
    });
    expect(usageEvidence(events)).toEqual({
      status: "known",
      usage: { inputTokens: 10, outputTokens: 5 },
    });
    expect(JSON.stringify(events)).not.toContain("declined");
    expect(server.requests[0]?.body).toMatchObject({
      model: "claude-sonnet-4-5",
      messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
      stream: true,
    });
  });

  it("Anthropic: a null or unknown category is `unspecified`", async () => {
    server.enqueue({ body: anthropicRefusal(null) }, { body: anthropicRefusal("a_new_category") });
    const client = createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    expect(refusalOf(await collect(client, baseRequest("claude-sonnet-4-5")))).toBe("unspecified");
    expect(refusalOf(await collect(client, baseRequest("claude-sonnet-4-5")))).toBe("unspecified");
  });

  it("Responses: a refusal part ends the response as `refusal` (was `end_turn`), category unspecified", async () => {
    const item = {
      id: "msg_1",
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "refusal", refusal: "I can't help with that." }],
    };
    const lines = [
      { type: "response.created", response: { id: "resp_1", status: "in_progress" } },
      {
        type: "response.output_item.added",
        output_index: 0,
        item: { ...item, status: "in_progress", content: [] },
      },
      {
        type: "response.content_part.added",
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        part: { type: "refusal", refusal: "" },
      },
      {
        type: "response.refusal.delta",
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        delta: "I can't help with that.",
      },
      {
        type: "response.refusal.done",
        item_id: "msg_1",
        output_index: 0,
        content_index: 0,
        refusal: "I can't help with that.",
      },
      { type: "response.output_item.done", output_index: 0, item },
      {
        type: "response.completed",
        response: {
          id: "resp_1",
          status: "completed",
          output: [item],
          usage: {
            input_tokens: 12,
            output_tokens: 7,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 0 },
          },
          service_tier: "default",
        },
      },
    ];
    server.enqueue({
      body: toSse(
        lines.map((l) => JSON.stringify(l)),
        { named: true },
      ),
    });
    const client = createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    const events = await collect(client, baseRequest("gpt-4.1"));
    expect(terminal(events)).toMatchObject({ stopReason: "refusal", refusal: "unspecified" });
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 12, outputTokens: 7 },
    });
    expect(server.requests[0]?.body).toMatchObject({
      model: "gpt-4.1",
      store: false,
      stream: true,
    });
  });
});
