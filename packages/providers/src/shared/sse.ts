import { createParser, type EventSourceMessage } from "eventsource-parser";
import { invalidStreamError } from "./errors.js";

/** One SSE event larger than this is a protocol violation, not something to buffer forever. */
const MAX_EVENT_CHARS = 16 * 1024 * 1024;

/**
 * Server-sent events of a response body, parsed by eventsource-parser (comments, `\r\n`, split
 * reads, multi-line `data:`), decoded as streaming UTF-8 so a chunk boundary inside a multi-byte
 * character is harmless. Closing the generator early (`return()`) cancels the body. A read error
 * (abort, reset) propagates to the caller, which classifies it.
 */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  provider: string,
): AsyncGenerator<EventSourceMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder("utf-8");
  const queue: EventSourceMessage[] = [];
  let overflow = false;
  const parser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: (event) => queue.push(event),
    onError: (error) => {
      if (error.type === "max-buffer-size-exceeded") overflow = true;
    },
  });
  let finished = false;
  let last = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (text) last = text;
      parser.feed(text);
      if (done) {
        finished = true;
        // A last event whose lines are complete but lacks the closing blank line is dispatched;
        // one cut mid-line is not (the transform then reports the stream torn).
        if (last.endsWith("\n") || last.endsWith("\r")) parser.feed("\n");
      }
      if (overflow)
        throw invalidStreamError(provider, `an event exceeded ${MAX_EVENT_CHARS} characters`);
      while (queue.length > 0) yield queue.shift() as EventSourceMessage;
      if (finished) return;
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
