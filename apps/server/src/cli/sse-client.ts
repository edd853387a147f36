/** One parsed SSE event (comments are skipped). */
export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/**
 * Parses an SSE byte stream into events, per the WHATWG rules the host relies on: lines end in
 * LF, CRLF or CR; a blank line ends an event; `:` lines are comments; multi-line data is joined
 * with LF. `onComment` sees keepalive comments (tests count them).
 */
export async function* readSseEvents(
  body: ReadableStream<Uint8Array>,
  onComment?: (text: string) => void,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let id: string | undefined;
  let event = "message";
  let data: string[] = [];
  const reader = body.getReader();
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let match = /\r\n|\r|\n/.exec(buffer);
      while (match) {
        // A lone CR at the very end may be the first half of a CRLF: wait for more.
        if (match[0] === "\r" && match.index === buffer.length - 1 && !done) break;
        const line = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        if (line === "") {
          if (data.length > 0) yield { id, event, data: data.join("\n") };
          event = "message";
          data = [];
        } else if (line.startsWith(":")) onComment?.(line.slice(1).trim());
        else {
          const colon = line.indexOf(":");
          const field = colon >= 0 ? line.slice(0, colon) : line;
          const raw = colon >= 0 ? line.slice(colon + 1) : "";
          const val = raw.startsWith(" ") ? raw.slice(1) : raw;
          if (field === "data") data.push(val);
          else if (field === "event") event = val;
          else if (field === "id") id = val;
        }
        match = /\r\n|\r|\n/.exec(buffer);
      }
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
