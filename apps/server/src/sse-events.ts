import { createParser } from "eventsource-parser";

/** One SSE event (comments are skipped); `id` is the last event id seen on the stream so far. */
export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/**
 * The one SSE reader of the CLI (`alma chat`), the console and the tests: `eventsource-parser` 4
 * (the WHATWG rules: LF, CRLF or CR line ends; a blank line ends an event; `:` lines are comments,
 * which `onComment` sees trimmed, keepalives included; multi-line data joined with LF) over a
 * fetch body. Web APIs only, so the console's bundle takes it as it is. An event the stream ends
 * in the middle of is dropped, as a browser's EventSource drops it.
 */
export async function* readSseEvents(
  body: ReadableStream<Uint8Array>,
  onComment?: (text: string) => void,
): AsyncGenerator<SseEvent> {
  const ready: SseEvent[] = [];
  let lastId: string | undefined;
  const parser = createParser({
    onEvent: (e) => {
      if (e.id !== undefined) lastId = e.id;
      ready.push({ id: lastId, event: e.event ?? "message", data: e.data });
    },
    ...(onComment ? { onComment: (text: string) => onComment(text.trim()) } : {}),
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      parser.feed(done ? decoder.decode() : decoder.decode(value, { stream: true }));
      while (ready.length > 0) yield ready.shift() as SseEvent;
      if (done) {
        finished = true;
        return;
      }
    }
  } finally {
    // A reader that stops early closes the connection (the host then detaches; the turn runs on).
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
