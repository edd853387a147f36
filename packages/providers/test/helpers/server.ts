import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach } from "vitest";

/** One scripted answer of the local server. */
export interface Exchange {
  readonly status?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: string | Buffer;
  /**
   * How to cut the body into writes: byte offsets, `"awkward"` (small odd-sized pieces, so reads
   * split inside lines, JSON and UTF-8 sequences), or whole (default).
   */
  readonly split?: readonly number[] | "awkward";
  /** Write this many bytes, then keep the connection open until the client goes away. */
  readonly hangAfter?: number;
}

export interface Captured {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: unknown;
}

export interface LocalServer {
  readonly url: string;
  readonly requests: Captured[];
  enqueue(...exchanges: Exchange[]): void;
  /** Resolves when the client closed a hanging response (abort reached the socket). */
  readonly closedByClient: Promise<void>;
  close(): Promise<void>;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function pieces(body: Buffer, split: Exchange["split"]): Buffer[] {
  if (split === undefined) return [body];
  const offsets =
    split === "awkward" ? awkwardOffsets(body.length) : [...split].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let at = 0;
  for (const offset of offsets) {
    if (offset <= at || offset >= body.length) continue;
    out.push(body.subarray(at, offset));
    at = offset;
  }
  out.push(body.subarray(at));
  return out;
}

/** Cuts of 1, 2, 3, 5, 7, 11, 13 bytes in turn: every boundary kind appears somewhere. */
function awkwardOffsets(length: number): number[] {
  const steps = [1, 2, 3, 5, 7, 11, 13];
  const out: number[] = [];
  let at = 0;
  for (let k = 0; at < length; k += 1) {
    at += steps[k % steps.length] as number;
    out.push(at);
  }
  return out;
}

/** A real HTTP server on 127.0.0.1 with a random port, answering queued exchanges in order. */
export async function startServer(): Promise<LocalServer> {
  const queue: Exchange[] = [];
  const requests: Captured[] = [];
  let notifyClosed: () => void = () => undefined;
  const closedByClient = new Promise<void>((resolve) => {
    notifyClosed = resolve;
  });
  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // keep the raw text
    }
    requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
    const exchange = queue.shift();
    if (!exchange) {
      res.writeHead(599, { "content-type": "text/plain" }).end("no exchange queued");
      return;
    }
    res.socket?.setNoDelay(true);
    res.writeHead(exchange.status ?? 200, {
      "content-type": "text/event-stream",
      ...exchange.headers,
    });
    const bytes = Buffer.isBuffer(exchange.body)
      ? exchange.body
      : Buffer.from(exchange.body, "utf8");
    if (exchange.hangAfter !== undefined) {
      res.write(bytes.subarray(0, exchange.hangAfter));
      res.on("close", () => notifyClosed());
      return;
    }
    for (const piece of pieces(bytes, exchange.split)) {
      res.write(piece);
      await tick();
    }
    res.end();
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    closedByClient,
    enqueue: (...exchanges) => {
      queue.push(...exchanges);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fresh local server for each test of the file: started before the test, closed after it. The
 * returned server reads through to the current test's one; closing it early is allowed.
 */
export function serverPerTest(): LocalServer {
  let current: LocalServer | undefined;
  beforeEach(async () => {
    current = await startServer();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  const now = (): LocalServer => {
    if (!current) throw new Error("the local server runs only during a test");
    return current;
  };
  return {
    get url() {
      return now().url;
    },
    get requests() {
      return now().requests;
    },
    get closedByClient() {
      return now().closedByClient;
    },
    enqueue: (...exchanges) => now().enqueue(...exchanges),
    close: () => now().close(),
  };
}
