// A local HTTP server that answers `POST /v1/messages` in Anthropic's streaming wire shape, with a
// scripted model and the usage a prompt cache (`PromptCacheModel`) would bill: `input_tokens`
// (uncached), `cache_read_input_tokens`, `cache_creation_input_tokens` and its 5m / 1h split.
// Bench-only. The real Anthropic adapter talks to it over real HTTP.
import type { CacheUsage, PromptBlock, Ttl } from "./model.js";
import { tokensOf } from "./model.js";
import {
  type Action,
  asArr,
  asObj,
  type CacheServer,
  type Obj,
  type ServerOptions,
  startCacheServer,
  type Wire,
} from "./server.js";

function marker(block: Obj): Ttl | undefined {
  const cc = asObj(block.cache_control);
  if (!cc) return undefined;
  return cc.ttl === "1h" ? "1h" : "5m";
}

function canonical(block: Obj): string {
  const { cache_control: _drop, ...rest } = block;
  return JSON.stringify(rest);
}

/** The request as the cache sees it: tools (deferred ones withheld), system, then each message block. */
export function promptBlocks(body: Obj): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  const definitions = new Map<string, number>();
  for (const t of asArr(body.tools)) {
    const tool = asObj(t) as Obj;
    const text = canonical(tool);
    if (tool.defer_loading === true) {
      definitions.set(String(tool.name), tokensOf(text));
      continue;
    }
    blocks.push({
      region: "tools",
      text,
      tokens: tokensOf(text),
      ...(marker(tool) ? { marker: marker(tool) } : {}),
    });
  }
  const system = body.system;
  const systemBlocks =
    typeof system === "string"
      ? [{ type: "text", text: system } as Obj]
      : asArr(system).map((b) => asObj(b) as Obj);
  for (const b of systemBlocks)
    blocks.push({
      region: "system",
      text: canonical(b),
      tokens: tokensOf(String(b.text ?? "")),
      ...(marker(b) ? { marker: marker(b) } : {}),
    });
  for (const m of asArr(body.messages)) {
    const msg = asObj(m) as Obj;
    const content =
      typeof msg.content === "string"
        ? [{ type: "text", text: msg.content } as Obj]
        : asArr(msg.content).map((b) => asObj(b) as Obj);
    content.forEach((b, i) => {
      const text = `${i === 0 ? String(msg.role) : ""}${canonical(b)}`;
      // A tool reference loads the deferred definition inline, where the reference is.
      const loaded = references(b).reduce((sum, name) => sum + (definitions.get(name) ?? 0), 0);
      blocks.push({
        region: "messages",
        text,
        tokens: tokensOf(text) + loaded,
        ...(marker(b) ? { marker: marker(b) } : {}),
      });
    });
  }
  const auto = asObj(body.cache_control);
  const last = blocks.at(-1);
  if (auto && last && !last.marker)
    blocks[blocks.length - 1] = { ...last, marker: auto.ttl === "1h" ? "1h" : "5m" };
  return blocks;
}

function references(block: Obj): string[] {
  if (block.type !== "tool_result") return [];
  return asArr(block.content).flatMap((c) => {
    const o = asObj(c);
    return o?.type === "tool_reference" && typeof o.tool_name === "string" ? [o.tool_name] : [];
  });
}

/** Where the request is in the session: the person's messages so far, and the assistant messages since the last. */
function position(body: Obj): { turn: number; step: number; callable: Set<string> } {
  let turn = -1;
  let step = 0;
  const callable = new Set<string>();
  for (const t of asArr(body.tools)) {
    const tool = asObj(t) as Obj;
    if (tool.defer_loading !== true && typeof tool.name === "string") callable.add(tool.name);
  }
  for (const m of asArr(body.messages)) {
    const msg = asObj(m) as Obj;
    const content =
      typeof msg.content === "string"
        ? [{ type: "text" } as Obj]
        : asArr(msg.content).map((b) => asObj(b) as Obj);
    if (msg.role === "assistant") step += 1;
    else if (
      content.some((b) => b.type === "text") &&
      !content.some((b) => b.type === "tool_result")
    ) {
      turn += 1;
      step = 0;
    }
    for (const b of content) for (const name of references(b)) callable.add(name);
  }
  return { turn, step, callable };
}

function sse(event: string, data: Obj): string {
  return `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;
}

function answer(action: Action, usage: CacheUsage, id: string): { text: string; output: number } {
  const output = tokensOf(action.type === "text" ? action.text : JSON.stringify(action.input)) + 5;
  const start = {
    input_tokens: usage.input,
    cache_creation_input_tokens: usage.write5m + usage.write1h,
    cache_read_input_tokens: usage.read,
    cache_creation: {
      ephemeral_5m_input_tokens: usage.write5m,
      ephemeral_1h_input_tokens: usage.write1h,
    },
    output_tokens: 1,
    service_tier: "standard",
  };
  let out = sse("message_start", {
    message: {
      id: `msg_${id}`,
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: start,
    },
  });
  if (action.type === "text") {
    out += sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
    out += sse("content_block_delta", {
      index: 0,
      delta: { type: "text_delta", text: action.text },
    });
  } else {
    out += sse("content_block_start", {
      index: 0,
      content_block: { type: "tool_use", id: `toolu_${id}`, name: action.name, input: {} },
    });
    out += sse("content_block_delta", {
      index: 0,
      delta: { type: "input_json_delta", partial_json: JSON.stringify(action.input) },
    });
  }
  out += sse("content_block_stop", { index: 0 });
  out += sse("message_delta", {
    delta: { stop_reason: action.type === "text" ? "end_turn" : "tool_use", stop_sequence: null },
    usage: { ...start, output_tokens: output },
  });
  out += sse("message_stop", {});
  return { text: out, output };
}

/** The Anthropic dialect: the prompt as the cache sees it, where the session is, and the SSE answer. */
export const ANTHROPIC_WIRE: Wire = {
  path: "/v1/messages",
  blocks: promptBlocks,
  position,
  answer: (action, usage, id) => answer(action, usage, id),
};

/** Starts the Anthropic server on 127.0.0.1 (a free port); `now` is the session's clock, `respond` the scripted model. */
export function startAnthropicCacheServer(opts: ServerOptions): Promise<CacheServer> {
  return startCacheServer(ANTHROPIC_WIRE, opts);
}
