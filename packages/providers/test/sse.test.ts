import { describe, expect, it } from "vitest";
import { readSse } from "../src/shared/sse.js";

function body(pieces: readonly Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      const next = pieces[i++];
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

async function read(pieces: readonly Uint8Array[]) {
  const out = [];
  for await (const message of readSse(body(pieces), "test")) out.push(message);
  return out;
}

describe("readSse", () => {
  it("decodes a multi-byte character split across reads, byte by byte", async () => {
    const bytes = Buffer.from('event: a\ndata: {"t":"925 ÷ 5 — 🙂"}\n\n', "utf8");
    const pieces = [...bytes].map((b) => Uint8Array.of(b));
    expect(await read(pieces)).toEqual([
      { event: "a", data: '{"t":"925 ÷ 5 — 🙂"}', id: undefined },
    ]);
  });

  it("handles CRLF framing, comments, multi-line data and a final event without a blank line", async () => {
    const text =
      ": OPENROUTER PROCESSING\r\n\r\ndata: line one\r\ndata: line two\r\n\r\ndata: [DONE]\r\n";
    const messages = await read([Buffer.from(text)]);
    expect(messages.map((m) => m.data)).toEqual(["line one\nline two", "[DONE]"]);
    expect((await read([Buffer.from("data: 1\n\ndata: {cut mid-li")])).map((m) => m.data)).toEqual([
      "1",
    ]);
  });

  it("cancels the body when the consumer stops early", async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(Buffer.from("data: 1\n\ndata: 2\n\n"));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const _ of readSse(stream, "test")) break;
    expect(cancelled).toBe(true);
  });
});
