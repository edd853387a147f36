import { describe, expect, it } from "vitest";
import { createAnthropicClient, createOpenAIChatClient } from "../src/index.js";
import { baseRequest, collect } from "./helpers/collect.js";
import { ANTHROPIC_TEXT as TEXT } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const firstEvents = TEXT.indexOf("event: ping");
const anthropic = () => createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });

describe("cancellation", () => {
  it("the signal aborts the reader mid-stream: cancelled, and the socket closes", async () => {
    server.enqueue({ body: TEXT, hangAfter: TEXT.indexOf('"text":"! I"') - 60 });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const event of anthropic().stream(
        baseRequest("claude-haiku-4-5"),
        controller.signal,
      )) {
        seen.push(event.type);
        controller.abort();
      }
    })();
    await expect(run).rejects.toMatchObject({
      kind: "cancelled",
      provider: "anthropic",
      retryable: false,
    });
    await server.closedByClient;
    expect(seen).toEqual(["text_delta"]);
  });

  it("an abort while waiting for the next chunk ends the stream with cancelled", async () => {
    server.enqueue({ body: TEXT, hangAfter: TEXT.indexOf('"text":"! I"') - 60 });
    const controller = new AbortController();
    const iterator = anthropic()
      .stream(baseRequest("claude-haiku-4-5"), controller.signal)
      [Symbol.asyncIterator]();
    expect(await iterator.next()).toMatchObject({ value: { type: "text_delta", text: "Hello" } });
    const pending = iterator.next();
    controller.abort();
    await expect(pending).rejects.toMatchObject({ kind: "cancelled" });
    await server.closedByClient;
  });

  it("AbortSignal.timeout is reported as timeout", async () => {
    server.enqueue({ body: TEXT, hangAfter: firstEvents });
    const signal = AbortSignal.timeout(50);
    await expect(
      collect(anthropic(), baseRequest("claude-haiku-4-5"), signal),
    ).rejects.toMatchObject({ kind: "timeout", retryable: true });
  });

  it("iterator return() closes the body", async () => {
    server.enqueue({ body: TEXT, hangAfter: TEXT.indexOf('"text":"! I"') + 40 });
    for await (const event of anthropic().stream(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    )) {
      expect(event.type).toBe("text_delta");
      break;
    }
    await server.closedByClient;
  });

  it("an already-aborted signal sends nothing", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      collect(
        createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
        baseRequest("gpt-4.1"),
        controller.signal,
      ),
    ).rejects.toMatchObject({
      kind: "cancelled",
    });
    expect(server.requests).toHaveLength(0);
  });
});
