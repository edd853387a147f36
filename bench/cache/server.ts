// The HTTP side shared by the cache-model servers: read the body, ask the wire dialect where the
// session is, ask the scripted model what to do, bill the prompt through the cache model, answer.
// Bench-only.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type CacheUsage, type PromptBlock, PromptCacheModel } from "./model.js";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Obj = { [k: string]: Json };

export const asObj = (v: Json | undefined): Obj | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
export const asArr = (v: Json | undefined): Json[] => (Array.isArray(v) ? v : []);

/** What the scripted model does next: call a tool (it must be callable) or answer. */
export type Action =
  | { readonly type: "tool"; readonly name: string; readonly input: Obj }
  | { readonly type: "text"; readonly text: string };

export interface ModelContext {
  /** The turn, counted by the person's messages (0-based), and the step within it. */
  readonly turn: number;
  readonly step: number;
  /** Tools the model can call now: advertised and not deferred, or loaded by a tool reference. */
  readonly callable: ReadonlySet<string>;
}

export interface RequestRecord extends CacheUsage {
  /** The session's clock when the request arrived (ms). */
  readonly at: number;
  readonly turn: number;
  readonly step: number;
  readonly output: number;
}

export interface CacheServer {
  readonly url: string;
  readonly records: RequestRecord[];
  close(): Promise<void>;
}

export interface ServerOptions {
  readonly now: () => number;
  readonly minimumTokens: number;
  readonly respond: (ctx: ModelContext) => Action;
}

/** A provider's dialect: its path, how its body becomes cache blocks and a position, and its streamed answer. */
export interface Wire {
  readonly path: string;
  blocks(body: Obj): PromptBlock[];
  position(body: Obj): { turn: number; step: number; callable: Set<string> };
  /** The SSE body and the output tokens it reports; `bill` may adjust the modelled usage to the provider's rules. */
  answer(
    action: Action,
    usage: CacheUsage,
    id: string,
  ): { text: string; output: number; usage?: CacheUsage };
}

async function readBody(req: IncomingMessage): Promise<Obj> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Obj;
}

/** Starts a server for `wire` on 127.0.0.1 (a free port). */
export async function startCacheServer(wire: Wire, opts: ServerOptions): Promise<CacheServer> {
  const cache = new PromptCacheModel(opts.minimumTokens);
  const records: RequestRecord[] = [];
  let n = 0;
  const server: Server = createServer((req, res) => {
    readBody(req)
      .then((body) => {
        if (req.url?.split("?")[0] !== wire.path) throw new Error(`unexpected path ${req.url}`);
        const { turn, step, callable } = wire.position(body);
        const action = opts.respond({ turn, step, callable });
        if (action.type === "tool" && !callable.has(action.name))
          throw new Error(`turn ${turn} step ${step}: ${action.name} is not callable`);
        const blocks = wire.blocks(body);
        const modelled = cache.account("session", blocks, opts.now());
        n += 1;
        if (process.env.BENCH_CACHE_TRACE === "1") trace(opts.now(), turn, step, blocks, modelled);
        const { text, output, usage } = wire.answer(action, modelled, String(n));
        records.push({ ...(usage ?? modelled), at: opts.now(), turn, step, output });
        res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req_${n}` });
        res.end(text);
      })
      .catch((error: Error) => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            type: "error",
            error: { type: "invalid_request_error", message: error.message.slice(0, 300) },
          }),
        );
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    records,
    close: () =>
      new Promise<void>((resolve, reject) => server.close((e) => (e ? reject(e) : resolve()))),
  };
}

/** `BENCH_CACHE_TRACE=1`: one line per request on stderr (session time, position, the cache's accounting, the breakpoints). */
function trace(
  now: number,
  turn: number,
  step: number,
  blocks: readonly PromptBlock[],
  u: CacheUsage,
): void {
  const markers = blocks.flatMap((b, i) => (b.marker ? [`${i}:${b.marker}`] : [])).join(",");
  console.error(
    `t=${Math.round(now / 1000)}s turn=${turn} step=${step} total=${u.total} read=${u.read} w5m=${u.write5m} w1h=${u.write1h} uncached=${u.input}${u.brokeAt ? ` broke=${u.brokeAt}` : ""} blocks=${blocks.length} markers=${markers}`,
  );
}
