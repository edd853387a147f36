// A local HTTP server that answers `POST /v1/messages` in Anthropic's streaming wire shape, with a
// scripted model and the usage a prompt cache (`PromptCacheModel`) would bill: `input_tokens`
// (uncached), `cache_read_input_tokens`, `cache_creation_input_tokens` and its 5m / 1h split.
// Bench-only. The real Anthropic adapter talks to it over real HTTP.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CacheUsage, type PromptBlock, PromptCacheModel, type Ttl, tokensOf } from "./model.js";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** What the scripted model does next: call a tool (it must be callable) or answer. */
export type Action = { readonly type: "tool"; readonly name: string; readonly input: Obj } | { readonly type: "text"; readonly text: string };

export interface ModelContext {
  /** The turn, counted by the person's messages (0-based), and the step within it. */
  readonly turn: number;
  readonly step: number;
  /** Tools the model can call now: advertised and not deferred, or loaded by a tool reference. */
  readonly callable: ReadonlySet<string>;
}

export interface RequestRecord extends CacheUsage {
  readonly turn: number;
  readonly step: number;
  readonly output: number;
}

export interface CacheServer {
  readonly url: string;
  readonly records: RequestRecord[];
  close(): Promise<void>;
}

const asObj = (v: Json | undefined): Obj | undefined => (v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined);
const asArr = (v: Json | undefined): Json[] => (Array.isArray(v) ? v : []);

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
    blocks.push({ region: "tools", text, tokens: tokensOf(text), ...(marker(tool) ? { marker: marker(tool) } : {}) });
  }
  const system = body.system;
  const systemBlocks = typeof system === "string" ? [{ type: "text", text: system } as Obj] : asArr(system).map((b) => asObj(b) as Obj);
  for (const b of systemBlocks) blocks.push({ region: "system", text: canonical(b), tokens: tokensOf(String(b.text ?? "")), ...(marker(b) ? { marker: marker(b) } : {}) });
  for (const m of asArr(body.messages)) {
    const msg = asObj(m) as Obj;
    const content = typeof msg.content === "string" ? [{ type: "text", text: msg.content } as Obj] : asArr(msg.content).map((b) => asObj(b) as Obj);
    content.forEach((b, i) => {
      const text = `${i === 0 ? String(msg.role) : ""}${canonical(b)}`;
      // A tool reference loads the deferred definition inline, where the reference is.
      const loaded = references(b).reduce((sum, name) => sum + (definitions.get(name) ?? 0), 0);
      blocks.push({ region: "messages", text, tokens: tokensOf(text) + loaded, ...(marker(b) ? { marker: marker(b) } : {}) });
    });
  }
  const auto = asObj(body.cache_control);
  const last = blocks.at(-1);
  if (auto && last && !last.marker) blocks[blocks.length - 1] = { ...last, marker: auto.ttl === "1h" ? "1h" : "5m" };
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
    const content = typeof msg.content === "string" ? [{ type: "text" } as Obj] : asArr(msg.content).map((b) => asObj(b) as Obj);
    if (msg.role === "assistant") step += 1;
    else if (content.some((b) => b.type === "text") && !content.some((b) => b.type === "tool_result")) {
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
    cache_creation: { ephemeral_5m_input_tokens: usage.write5m, ephemeral_1h_input_tokens: usage.write1h },
    output_tokens: 1,
    service_tier: "standard",
  };
  let out = sse("message_start", { message: { id: `msg_${id}`, type: "message", role: "assistant", model: "claude-sonnet-4-5", content: [], stop_reason: null, stop_sequence: null, usage: start } });
  if (action.type === "text") {
    out += sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
    out += sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: action.text } });
  } else {
    out += sse("content_block_start", { index: 0, content_block: { type: "tool_use", id: `toolu_${id}`, name: action.name, input: {} } });
    out += sse("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(action.input) } });
  }
  out += sse("content_block_stop", { index: 0 });
  out += sse("message_delta", { delta: { stop_reason: action.type === "text" ? "end_turn" : "tool_use", stop_sequence: null }, usage: { ...start, output_tokens: output } });
  out += sse("message_stop", {});
  return { text: out, output };
}

async function readBody(req: IncomingMessage): Promise<Obj> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Obj;
}

/** Starts the server on 127.0.0.1 (a free port); `now` is the session's clock, `respond` the scripted model. */
export async function startAnthropicCacheServer(opts: { now: () => number; minimumTokens: number; respond: (ctx: ModelContext) => Action }): Promise<CacheServer> {
  const cache = new PromptCacheModel(opts.minimumTokens);
  const records: RequestRecord[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    readBody(req)
      .then((body) => {
        const { turn, step, callable } = position(body);
        const action = opts.respond({ turn, step, callable });
        if (action.type === "tool" && !callable.has(action.name)) throw new Error(`turn ${turn} step ${step}: ${action.name} is not callable`);
        const usage = cache.account("session", promptBlocks(body), opts.now());
        n += 1;
        const { text, output } = answer(action, usage, String(n));
        records.push({ ...usage, turn, step, output });
        res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req_${n}` });
        res.end(text);
      })
      .catch((error: Error) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message: error.message.slice(0, 300) } }));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    records,
    close: () => new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}
