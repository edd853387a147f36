// The OpenAI dialects of the cache-model server, Chat Completions (`POST /v1/chat/completions`)
// and Responses (`POST /v1/responses`: tools, `instructions`, input items; `input_tokens` with
// `input_tokens_details.cached_tokens`):
// automatic prefix caching as the prompt-caching guide describes it for models before gpt-5.6
// (shared/reference/provider-wire.md §2.6): every prefix of a request is cached, a request reads the
// longest live one in 128-token steps from 1,024 tokens, writes are not billed, and the usage chunk
// reports `prompt_tokens` (cache included) with `prompt_tokens_details.cached_tokens`. Tools are
// modelled before the messages. Bench-only.
import { SEARCH_TOOLS_NAME } from "@alma-harness/core";
import type { CacheUsage, PromptBlock } from "./model.js";
import { tokensOf } from "./model.js";
import {
  type Action,
  asArr,
  asObj,
  type CacheServer,
  type Json,
  type Obj,
  type ServerOptions,
  startCacheServer,
  type Wire,
} from "./server.js";

const STEP = 128;

function blocks(body: Obj): PromptBlock[] {
  const out: PromptBlock[] = [];
  for (const t of asArr(body.tools)) {
    const text = JSON.stringify(t);
    out.push({ region: "tools", text, tokens: tokensOf(text), marker: "5m" });
  }
  for (const m of asArr(body.messages)) {
    const msg = asObj(m) as Obj;
    const text = JSON.stringify(msg);
    out.push({
      region: msg.role === "system" || msg.role === "developer" ? "system" : "messages",
      text,
      tokens: tokensOf(text),
      marker: "5m",
    });
  }
  return out;
}

function position(body: Obj): { turn: number; step: number; callable: Set<string> } {
  let turn = -1;
  let step = 0;
  const callable = new Set<string>();
  for (const t of asArr(body.tools)) {
    const name = asObj(asObj(t)?.function)?.name;
    if (typeof name === "string") callable.add(name);
  }
  for (const m of asArr(body.messages)) {
    const role = asObj(m)?.role;
    if (role === "user") {
      turn += 1;
      step = 0;
    } else if (role === "assistant") step += 1;
  }
  return { turn, step, callable };
}

const chunk = (id: string, data: Obj): string =>
  `data: ${JSON.stringify({ id: `chatcmpl-${id}`, object: "chat.completion.chunk", created: 0, model: "gpt-5", ...data })}\n\n`;

/** Automatic caching's bill: reads in 128-token steps, writes free. */
function automatic(modelled: CacheUsage): CacheUsage {
  const read = Math.floor(modelled.read / STEP) * STEP;
  return { ...modelled, read, write5m: 0, write1h: 0, input: modelled.total - read };
}

const outputOf = (action: Action) =>
  tokensOf(action.type === "text" ? action.text : JSON.stringify(action.input)) + 5;

function answer(
  action: Action,
  modelled: CacheUsage,
  id: string,
): { text: string; output: number; usage: CacheUsage } {
  const usage = automatic(modelled);
  const read = usage.read;
  const output = outputOf(action);
  const delta =
    action.type === "text"
      ? { role: "assistant", content: action.text }
      : {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              index: 0,
              id: `call_${id}`,
              type: "function",
              function: { name: action.name, arguments: JSON.stringify(action.input) },
            },
          ],
        };
  let text = chunk(id, { choices: [{ index: 0, delta: delta as Obj, finish_reason: null }] });
  text += chunk(id, {
    choices: [
      { index: 0, delta: {}, finish_reason: action.type === "text" ? "stop" : "tool_calls" },
    ],
  });
  text += chunk(id, {
    choices: [],
    usage: {
      prompt_tokens: usage.total,
      completion_tokens: output,
      total_tokens: usage.total + output,
      prompt_tokens_details: { cached_tokens: read },
      completion_tokens_details: { reasoning_tokens: 0 },
    },
  });
  text += "data: [DONE]\n\n";
  return { text, output, usage };
}

export const OPENAI_CHAT_WIRE: Wire = { path: "/v1/chat/completions", blocks, position, answer };

/**
 * The Responses prompt: tools, then `instructions`, then each input item. A deferred function
 * (`defer_loading`, tool search) shows the model only its name and description ("in practice tool
 * search is mostly deferring the parameter schema"); a `tool_search_output` item carries the
 * definitions it loads, so they count where it sits, at the end of the context.
 */
function responsesBlocks(body: Obj): PromptBlock[] {
  const out: PromptBlock[] = [];
  for (const t of asArr(body.tools)) {
    const tool = asObj(t) as Obj;
    const text =
      tool.defer_loading === true
        ? JSON.stringify({ name: tool.name, description: tool.description })
        : JSON.stringify(t);
    out.push({ region: "tools", text, tokens: tokensOf(text), marker: "5m" });
  }
  if (typeof body.instructions === "string")
    out.push({
      region: "system",
      text: body.instructions,
      tokens: tokensOf(body.instructions),
      marker: "5m",
    });
  for (const item of asArr(body.input)) {
    const text = JSON.stringify(item);
    out.push({ region: "messages", text, tokens: tokensOf(text), marker: "5m" });
  }
  return out;
}

function responsesPosition(body: Obj): { turn: number; step: number; callable: Set<string> } {
  let turn = -1;
  let step = 0;
  const callable = new Set<string>();
  for (const t of asArr(body.tools)) {
    const tool = asObj(t);
    if (tool?.type === "tool_search") callable.add(SEARCH_TOOLS_NAME);
    if (typeof tool?.name === "string" && tool.defer_loading !== true) callable.add(tool.name);
  }
  for (const i of asArr(body.input)) {
    const item = asObj(i);
    if (item?.type === "tool_search_output")
      for (const t of asArr(item.tools))
        if (typeof asObj(t)?.name === "string") callable.add(String(asObj(t)?.name));
    // A user message after a tool search output is that search's text, not the person's next message.
    if (item?.role === "user" && !afterSearch(body.input, i)) {
      turn += 1;
      step = 0;
    } else if (
      item?.role === "assistant" ||
      item?.type === "function_call" ||
      item?.type === "tool_search_call"
    )
      step += 1;
  }
  return { turn, step, callable };
}

/** Whether an input item follows a `tool_search_output` (with only call outputs between). */
function afterSearch(input: Json | undefined, item: Json): boolean {
  const items = asArr(input);
  for (let k = items.indexOf(item) - 1; k >= 0; k--) {
    const type = asObj(items[k])?.type;
    if (type === "tool_search_output") return true;
    if (type !== "function_call_output") return false;
  }
  return false;
}

const event = (type: string, data: Obj, seq: number): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq, ...data })}\n\n`;

function responsesAnswer(
  action: Action,
  modelled: CacheUsage,
  id: string,
  native = false,
): { text: string; output: number; usage: CacheUsage } {
  const usage = automatic(modelled);
  const output = outputOf(action);
  const item: Obj =
    action.type === "text"
      ? {
          id: `msg_${id}`,
          type: "message",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: action.text, annotations: [] }],
        }
      : native && action.name === SEARCH_TOOLS_NAME
        ? {
            id: `tsc_${id}`,
            type: "tool_search_call",
            status: "completed",
            call_id: `call_${id}`,
            execution: "client",
            arguments: action.input,
          }
        : {
            id: `fc_${id}`,
            type: "function_call",
            status: "completed",
            call_id: `call_${id}`,
            name: action.name,
            arguments: JSON.stringify(action.input),
          };
  const response = {
    id: `resp_${id}`,
    object: "response",
    status: "in_progress",
    model: "gpt-5",
    output: [],
  };
  let seq = 0;
  let text = event("response.created", { response }, seq++);
  if (action.type === "text")
    text += event(
      "response.output_text.delta",
      { item_id: `msg_${id}`, output_index: 0, content_index: 0, delta: action.text },
      seq++,
    );
  else if (item.type === "function_call")
    text += event(
      "response.function_call_arguments.delta",
      { item_id: `fc_${id}`, output_index: 0, delta: String(item.arguments) },
      seq++,
    );
  text += event("response.output_item.done", { output_index: 0, item }, seq++);
  const wireUsage = {
    input_tokens: usage.total,
    input_tokens_details: { cached_tokens: usage.read },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total + output,
  };
  text += event(
    "response.completed",
    { response: { ...response, status: "completed", output: [item], usage: wireUsage } },
    seq++,
  );
  return { text, output, usage };
}

export const OPENAI_RESPONSES_WIRE: Wire = {
  path: "/v1/responses",
  blocks: responsesBlocks,
  position: responsesPosition,
  answer: responsesAnswer,
};

/** The Responses dialect on a model with tool search: a search the model makes is a client-executed `tool_search_call`. */
export const OPENAI_RESPONSES_NATIVE_WIRE: Wire = {
  ...OPENAI_RESPONSES_WIRE,
  answer: (action, usage, id) => responsesAnswer(action, usage, id, true),
};

/** Starts the Responses server with tool search (gpt-5.4 and later) on 127.0.0.1 (a free port). */
export function startOpenAIResponsesNativeCacheServer(opts: ServerOptions): Promise<CacheServer> {
  return startCacheServer(OPENAI_RESPONSES_NATIVE_WIRE, opts);
}

/** Starts the Responses server on 127.0.0.1 (a free port). */
export function startOpenAIResponsesCacheServer(opts: ServerOptions): Promise<CacheServer> {
  return startCacheServer(OPENAI_RESPONSES_WIRE, opts);
}

/** Starts the Chat Completions server on 127.0.0.1 (a free port). */
export function startOpenAIChatCacheServer(opts: ServerOptions): Promise<CacheServer> {
  return startCacheServer(OPENAI_CHAT_WIRE, opts);
}
