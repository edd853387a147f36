import { once } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Handle } from "./http/app.js";
import type { ConnectionInfo } from "./http/connections.js";
import { errorResponse, HttpError } from "./http/errors.js";
import { withSecurityHeaders } from "./http/hardening.js";

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** Stops delivering the body and discards the rest, keeping the socket (unlike destroying the request). */
function discard(req: IncomingMessage): void {
  req.removeAllListeners("data");
  req.resume();
}

/**
 * The request body as a web stream that pulls from Node with backpressure. Cancelling it (a
 * handler that stopped at its size limit) discards the rest instead of destroying the socket, so
 * the client still reads the 413.
 */
function bodyOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on("data", (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once("end", () => controller.close());
        req.once("error", (error) => controller.error(error));
        req.pause();
      },
      pull() {
        req.resume();
      },
      cancel() {
        discard(req);
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

/** The standard Request for a Node request; its signal aborts when the client goes away. */
export function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(url, {
    method,
    headers: headersOf(req),
    signal,
    ...(hasBody ? { body: bodyOf(req), duplex: "half" } : {}),
  } as RequestInit);
}

/** Writes a Response to Node, streaming its body with backpressure; stops when the client leaves. */
async function send(res: ServerResponse, response: Response, signal: AbortSignal): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  const cancel = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value)) await once(res, "drain", { signal });
    }
    res.end();
  } catch {
    cancel();
    res.destroy();
  } finally {
    signal.removeEventListener("abort", cancel);
  }
}

/** The core's answer; a request no URL can be built from is 400, a handler that threw is 500. */
async function answer(
  handle: Handle,
  req: IncomingMessage,
  signal: AbortSignal,
  connection: ConnectionInfo,
): Promise<Response> {
  let request: Request;
  try {
    request = toRequest(req, signal);
  } catch {
    // A Host header or target no URL can be built from: the client's request, not the host's fault.
    return withSecurityHeaders(
      errorResponse(
        new HttpError("bad_request", "the request's Host header or target is not valid"),
      ),
    );
  }
  try {
    return await handle(request, connection);
  } catch {
    return withSecurityHeaders(errorResponse(new Error("internal")));
  }
}

/** Which connections came in over the host's cap (`ConnectionCap`). */
export interface OverCapacity {
  isOver(socket: Socket): boolean;
}

/** Where a request waits for its share of the event loop (`LoopBudget`). */
export interface LoopShare {
  enter(): Promise<void>;
}

/** A health check is answered at once: it must never wait behind the work of other requests. */
function isHealthCheck(req: IncomingMessage): boolean {
  return (req.method === "GET" || req.method === "HEAD") && /^\/healthz(\?|$)/.test(req.url ?? "");
}

/**
 * The thin Node adapter: `node:http` in, the host's `Request`/`Response` core, `node:http` out. A
 * client that disconnects aborts the request's signal and cancels the response stream (for SSE
 * that detaches the reader; the turn itself is never tied to the socket). A connection over the
 * cap gets its answer with `Connection: close`, so Node closes it once the answer is written. With
 * `loop`, each request but a health check waits there for its share of the event loop, and one
 * whose client left meanwhile is not handled. `healthOnly`: the health listener's (only `/healthz`).
 */
export function nodeListener(
  handle: Handle,
  cap?: OverCapacity,
  loop?: LoopShare,
  healthOnly = false,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const connection: ConnectionInfo = {
      overCapacity: cap?.isOver(req.socket) ?? false,
      ...(healthOnly ? { healthOnly } : {}),
    };
    if (connection.overCapacity) res.setHeader("connection", "close");
    const controller = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) controller.abort();
    });
    void (async () => {
      if (loop && !isHealthCheck(req)) {
        await loop.enter();
        if (controller.signal.aborted) return;
      }
      const response = await answer(handle, req, controller.signal, connection);
      // A body the handler refused unread (413, 401) is discarded so the client can read the answer.
      if (!req.complete) discard(req);
      await send(res, response, controller.signal);
    })();
  };
}
