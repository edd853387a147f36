// The OpenAI Chat Completions dialect of the cache-model server (`POST /v1/chat/completions`):
// automatic prefix caching as the prompt-caching guide describes it for models before gpt-5.6
// (shared/reference/provider-wire.md §2.6): every prefix of a request is cached, a request reads the
// longest live one in 128-token steps from 1,024 tokens, writes are not billed, and the usage chunk
// reports `prompt_tokens` (cache included) with `prompt_tokens_details.cached_tokens`. Tools are
// modelled before the messages. Bench-only.
import type { CacheUsage, PromptBlock } from "./model.js";
import { tokensOf } from "./model.js";
import { type Action, asArr, asObj, type CacheServer, type Obj, type ServerOptions, startCacheServer, type Wire } from "./server.js";

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
    out.push({ region: msg.role === "system" || msg.role === "developer" ? "system" : "messages", text, tokens: tokensOf(text), marker: "5m" });
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

const chunk = (id: string, data: Obj): string => `data: ${JSON.stringify({ id: `chatcmpl-${id}`, object: "chat.completion.chunk", created: 0, model: "gpt-5", ...data })}\n\n`;

function answer(action: Action, modelled: CacheUsage, id: string): { text: string; output: number; usage: CacheUsage } {
  const read = Math.floor(modelled.read / STEP) * STEP;
  const usage: CacheUsage = { ...modelled, read, write5m: 0, write1h: 0, input: modelled.total - read };
  const output = tokensOf(action.type === "text" ? action.text : JSON.stringify(action.input)) + 5;
  const delta =
    action.type === "text"
      ? { role: "assistant", content: action.text }
      : { role: "assistant", content: null, tool_calls: [{ index: 0, id: `call_${id}`, type: "function", function: { name: action.name, arguments: JSON.stringify(action.input) } }] };
  let text = chunk(id, { choices: [{ index: 0, delta: delta as Obj, finish_reason: null }] });
  text += chunk(id, { choices: [{ index: 0, delta: {}, finish_reason: action.type === "text" ? "stop" : "tool_calls" }] });
  text += chunk(id, {
    choices: [],
    usage: { prompt_tokens: usage.total, completion_tokens: output, total_tokens: usage.total + output, prompt_tokens_details: { cached_tokens: read }, completion_tokens_details: { reasoning_tokens: 0 } },
  });
  text += "data: [DONE]\n\n";
  return { text, output, usage };
}

export const OPENAI_CHAT_WIRE: Wire = { path: "/v1/chat/completions", blocks, position, answer };

/** Starts the Chat Completions server on 127.0.0.1 (a free port). */
export function startOpenAIChatCacheServer(opts: ServerOptions): Promise<CacheServer> {
  return startCacheServer(OPENAI_CHAT_WIRE, opts);
}
