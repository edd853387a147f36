import { describe, expect, it } from "vitest";
import { createAnthropicClient, type ProviderClient } from "../src/index.js";
import { baseRequest } from "./helpers/collect.js";
import { ANTHROPIC_TEXT as TEXT } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

const server = serverPerTest();

const client = (): ProviderClient =>
  createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });

async function drain(iterable: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of iterable) {
    // consume
  }
}

describe("single-dispatch evidence", () => {
  it("a complete stream: known usage, the request id, content events unchanged", async () => {
    server.enqueue({ body: TEXT, headers: { "request-id": "req_abc" } });
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    );
    const types: string[] = [];
    for await (const event of dispatch.events) types.push(event.type);
    expect(types.at(-1)).toBe("response_completed");
    expect(await dispatch.evidence).toMatchObject({
      status: "known",
      usage: { inputTokens: 12, outputTokens: 30 },
    });
    expect(dispatch.requestRef()).toBe("req_abc");
  });

  it("an aborted signal before dispatch: not_dispatched (aborted), nothing sent", async () => {
    const controller = new AbortController();
    controller.abort();
    const dispatch = client().streamEvidence(baseRequest("claude-haiku-4-5"), controller.signal);
    await expect(drain(dispatch.events)).rejects.toMatchObject({ kind: "cancelled" });
    expect(await dispatch.evidence).toEqual({ status: "not_dispatched", cause: "aborted" });
    expect(server.requests).toHaveLength(0);
  });

  it("a request validate refuses: not_dispatched (invalid)", async () => {
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5", { serviceTier: "batch" }),
      new AbortController().signal,
    );
    await expect(drain(dispatch.events)).rejects.toMatchObject({ kind: "unsupported" });
    expect(await dispatch.evidence).toEqual({ status: "not_dispatched", cause: "invalid" });
  });

  it("a 429 refusal: known zero usage (the provider ran nothing)", async () => {
    server.enqueue({
      status: 429,
      body: JSON.stringify({
        type: "error",
        error: { type: "rate_limit_error", message: "slow down" },
      }),
    });
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    );
    await expect(drain(dispatch.events)).rejects.toMatchObject({
      kind: "rate_limited",
      rejection: { kind: "anthropic_rate_limit_v1" },
    });
    expect(await dispatch.evidence).toEqual({
      status: "known",
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });

  it("an early return: unknown (billing unresolved), and the body is closed", async () => {
    server.enqueue({ body: TEXT, hangAfter: TEXT.indexOf('"text":"! I"') - 60 });
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    );
    for await (const _ of dispatch.events) break;
    expect(await dispatch.evidence).toEqual({ status: "unknown" });
    await server.closedByClient;
  });

  it("a torn stream: unknown", async () => {
    server.enqueue({ body: TEXT.slice(0, TEXT.indexOf("event: message_delta")) });
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    );
    await expect(drain(dispatch.events)).rejects.toMatchObject({ kind: "stream_torn" });
    expect(await dispatch.evidence).toEqual({ status: "unknown" });
  });

  it("never consumed then returned: not_dispatched; consumed twice: refused", async () => {
    const dispatch = client().streamEvidence(
      baseRequest("claude-haiku-4-5"),
      new AbortController().signal,
    );
    const iterator = dispatch.events[Symbol.asyncIterator]();
    await iterator.return?.();
    expect(await dispatch.evidence).toEqual({ status: "not_dispatched" });
    expect(() => dispatch.events[Symbol.asyncIterator]()).toThrow(/once/);
    expect(server.requests).toHaveLength(0);
  });
});
