import type { ModelClient } from "@alma-harness/core";
import {
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAIResponsesClient,
  createOpenRouterClient,
} from "@alma-harness/providers";
import { toSse } from "../../../providers/test/helpers/fixtures.js";

/**
 * Scripted answers in each provider's stream shape, for the prefix property test. The shapes are
 * the ones the adapters' own tests read (reference/provider-wire.md §1.5, §2.2, §2.4, §3); they are
 * built here, not recorded: what the test checks is the request bodies the real adapters send.
 */
export type Shape = "anthropic" | "openai-chat" | "openai-responses" | "openrouter";
export const SHAPES: readonly Shape[] = [
  "anthropic",
  "openai-chat",
  "openai-responses",
  "openrouter",
];

export interface Call {
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
}
/** One model answer: a text, or tool calls (several are parallel calls of one step). */
export type Answer = { readonly text: string } | { readonly calls: readonly Call[] };

export const MODELS: Readonly<Record<Shape, string>> = {
  anthropic: "claude-sonnet-4-5",
  "openai-chat": "gpt-4.1",
  "openai-responses": "gpt-4.1",
  openrouter: "anthropic/claude-sonnet-4.5",
};

/** How a run loads deferred tools where the adapter can choose (Anthropic, OpenAI Responses). */
export interface LoadingOptions {
  readonly anthropicLoading?: "native" | "append";
  /** OpenAI Responses on a model with tool search (gpt-5.4): searches arrive as client-executed `tool_search_call` items. */
  readonly responsesNative?: boolean;
}

/** The model a run asks for: the shape's, or gpt-5.4 for native loading on Responses. */
export const modelOf = (shape: Shape, options: LoadingOptions = {}): string =>
  shape === "openai-responses" && options.responsesNative ? "gpt-5.4" : MODELS[shape];

export function clientOf(shape: Shape, baseURL: string, options: LoadingOptions = {}): ModelClient {
  switch (shape) {
    case "anthropic":
      return createAnthropicClient({
        apiKey: "k",
        baseURL,
        ...(options.anthropicLoading ? { deferredLoading: options.anthropicLoading } : {}),
      });
    case "openai-chat":
      return createOpenAIChatClient({ apiKey: "k", baseURL });
    case "openai-responses":
      return createOpenAIResponsesClient({
        apiKey: "k",
        baseURL,
        deferredLoading: options.responsesNative ? "native" : "append",
      });
    case "openrouter":
      return createOpenRouterClient({ apiKey: "k", baseURL });
  }
}

let ids = 0;
const nextId = () => (ids += 1);

/** The SSE body answering one request in `shape`. */
export function sseOf(shape: Shape, answer: Answer, options: LoadingOptions = {}): string {
  switch (shape) {
    case "anthropic":
      return anthropic(answer);
    case "openai-responses":
      return responses(answer, options.responsesNative === true);
    default:
      return chat(answer, shape);
  }
}

function anthropic(answer: Answer): string {
  const events: object[] = [
    {
      type: "message_start",
      message: {
        id: `msg_${nextId()}`,
        type: "message",
        role: "assistant",
        model: MODELS.anthropic,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 1 },
      },
    },
  ];
  if ("text" in answer) {
    events.push({
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" },
    });
    events.push({
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: answer.text },
    });
    events.push({ type: "content_block_stop", index: 0 });
  } else {
    answer.calls.forEach((call, index) => {
      events.push({
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: `toolu_${nextId()}`, name: call.name, input: {} },
      });
      events.push({
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(call.input) },
      });
      events.push({ type: "content_block_stop", index });
    });
  }
  events.push({
    type: "message_delta",
    delta: { stop_reason: "text" in answer ? "end_turn" : "tool_use", stop_sequence: null },
    usage: { output_tokens: 5 },
  });
  events.push({ type: "message_stop" });
  return toSse(
    events.map((e) => JSON.stringify(e)),
    { named: true },
  );
}

function chat(answer: Answer, shape: Shape): string {
  const id = `chatcmpl-${nextId()}`;
  const base = {
    id,
    object: "chat.completion.chunk",
    model: MODELS[shape],
    ...(shape === "openrouter" ? { provider: "Anthropic" } : {}),
  };
  const chunks: object[] = [];
  if ("text" in answer)
    chunks.push({
      ...base,
      choices: [{ index: 0, delta: { role: "assistant", content: answer.text } }],
    });
  else {
    const tool_calls = answer.calls.map((call, index) => ({
      index,
      id: `call_${nextId()}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.input) },
    }));
    chunks.push({ ...base, choices: [{ index: 0, delta: { role: "assistant", tool_calls } }] });
  }
  chunks.push({
    ...base,
    choices: [{ index: 0, delta: {}, finish_reason: "text" in answer ? "stop" : "tool_calls" }],
  });
  chunks.push({
    ...base,
    choices: [],
    usage: { prompt_tokens: 100, completion_tokens: 5, total_tokens: 105 },
  });
  return toSse(
    chunks.map((c) => JSON.stringify(c)),
    { named: false, done: true },
  );
}

function responses(answer: Answer, native: boolean): string {
  const id = `resp_${nextId()}`;
  const events: object[] = [{ type: "response.created", response: { id, status: "in_progress" } }];
  if ("text" in answer)
    events.push({
      type: "response.output_text.delta",
      item_id: "msg_1",
      output_index: 0,
      content_index: 0,
      delta: answer.text,
    });
  else {
    answer.calls.forEach((call, index) => {
      const n = nextId();
      const item =
        native && call.name === "search_tools"
          ? {
              type: "tool_search_call",
              id: `tsc_${n}`,
              call_id: `call_${n}`,
              execution: "client",
              arguments: call.input,
              status: "completed",
            }
          : {
              type: "function_call",
              id: `fc_${n}`,
              call_id: `call_${n}`,
              name: call.name,
              arguments: JSON.stringify(call.input),
              status: "completed",
            };
      events.push({ type: "response.output_item.done", output_index: index, item });
    });
  }
  const usage = {
    input_tokens: 100,
    output_tokens: 5,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 },
  };
  events.push({
    type: "response.completed",
    response: { id, status: "completed", usage, service_tier: "default" },
  });
  return toSse(
    events.map((e) => JSON.stringify(e)),
    { named: true },
  );
}
