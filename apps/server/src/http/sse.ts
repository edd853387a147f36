import { formatSse } from "@alma-harness/loop";
import { describe, statusOf } from "./errors.js";

export const DEFAULT_PING_MS = 15_000;
/** The reconnection delay the stream asks of an `EventSource` (its `retry:` field). */
export const SSE_RETRY_MS = 2_000;

/**
 * One SSE response's writer. `detached` aborts when the client goes away; writes after that are
 * dropped. `id` is the event's resumable position (see `event-ids.ts`); an event without one
 * leaves the client's last event id as it was.
 */
export interface SseChannel {
  send(event: string, data: unknown, id?: string): void;
  readonly detached: AbortSignal;
}

/**
 * One frame: `id`, `event` and a single `data` line of JSON. Event names and ids with CR or LF are
 * refused (they would split the frame); JSON has no raw line breaks, so data stays one line.
 */
export function sseFrame(event: string, data: unknown, id?: string): string {
  if (/[\r\n]/.test(event) || /[\r\n]/.test(id ?? ""))
    throw new TypeError("SSE fields may not contain CR or LF");
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(event))
    throw new TypeError("SSE event names are 1-64 characters of [A-Za-z0-9_.-]");
  return formatSse({ event, data: JSON.stringify(data) }, id);
}

/**
 * Streams what `run` sends as SSE, with the ids it gives, a `retry:` hint first and a keepalive
 * comment every `pingMs`. When the client disconnects, the stream is cancelled: `detached` aborts and nothing
 * more is written, but `run`'s own work (the turn) is not cancelled by it. A throw from `run`
 * becomes a final `error` event with the code and status the JSON API would have used.
 */
export function sseResponse(
  run: (channel: SseChannel) => Promise<void>,
  opts: { pingMs?: number; headers?: Record<string, string> } = {},
): Response {
  const encoder = new TextEncoder();
  const detach = new AbortController();
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => {
    closed = true;
    clearInterval(timer);
  };
  const write = (text: string) => {
    if (closed || !controller) return;
    try {
      controller.enqueue(encoder.encode(text));
    } catch {
      stop();
    }
  };
  const channel: SseChannel = {
    send(event, data, id) {
      write(sseFrame(event, data, id));
    },
    detached: detach.signal,
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      write(`retry: ${SSE_RETRY_MS}\n\n: stream open\n\n`);
      timer = setInterval(() => write(": ping\n\n"), opts.pingMs ?? DEFAULT_PING_MS);
      void run(channel)
        .catch((error: unknown) => {
          const { code, message } = describe(error);
          if (!closed) channel.send("error", { status: statusOf(code), error: { code, message } });
        })
        .finally(() => {
          if (closed) return;
          stop();
          try {
            c.close();
          } catch {
            // already closed by a cancel
          }
        });
    },
    cancel() {
      stop();
      detach.abort();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
      ...opts.headers,
    },
  });
}
