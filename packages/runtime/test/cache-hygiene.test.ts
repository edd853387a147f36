import { sessionPseudonym, trailKey } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import { type CacheHygieneNotice, cacheHygieneGuard } from "@alma-harness/loop";
import { ANTHROPIC_PRICES, createAnthropicClient } from "@alma-harness/providers";
import { memory } from "@alma-harness/runtime";
import { describe, expect, it } from "vitest";
import { toSse } from "../../providers/test/helpers/fixtures.js";
import { serverPerTest } from "../../providers/test/helpers/server.js";

/**
 * Issue 16, item 4, end to end: the runner hands `cacheHygiene` to the engine, the real Anthropic
 * adapter maps the wire's cache counts (5m / 1h split) into the usage the guard reads, and the
 * warning lands on the stored context trail under the session's pseudonym, with its cause only.
 */
const server = serverPerTest();
const KEY = "cache-hygiene-runtime-test-key-32-bytes!";

/** One Anthropic answer whose usage is a cold write of the prefix (`write` tokens at `ttl`). */
function coldAnswer(ttl: "5m" | "1h", write: number, read = 0): string {
  const usage = {
    input_tokens: 12,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read,
    cache_creation: {
      ephemeral_5m_input_tokens: ttl === "5m" ? write : 0,
      ephemeral_1h_input_tokens: ttl === "1h" ? write : 0,
    },
    output_tokens: 1,
  };
  const events = [
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        usage,
      },
    },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } },
    { type: "content_block_stop", index: 0 },
    {
      type: "message_delta",
      delta: { stop_reason: "end_turn", stop_sequence: null },
      usage: { ...usage, output_tokens: 3 },
    },
    { type: "message_stop" },
  ];
  return toSse(
    events.map((e) => JSON.stringify(e)),
    { named: true },
  );
}

function runtime(clock: ManualClock, ttl: "5m" | "1h", notices: CacheHygieneNotice[] = []) {
  const client = createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` });
  return memory({
    clients: [client],
    policy: {
      resolve: () => ({
        clientId: client.id,
        model: "claude-sonnet-4-5",
        maxOutputTokens: 256,
        cache: { ttl },
      }),
    },
    prompt: "You are the clinic's assistant.",
    prices: ANTHROPIC_PRICES,
    policyVersion: "p",
    priceVersion: ANTHROPIC_PRICES.version,
    configRevision: "r",
    resultRetentionMs: 24 * 3_600_000,
    runTimeoutMs: 600_000,
    maxCalls: 4,
    maxInputChars: 1_000,
    clock,
    trailKey: KEY,
    cacheHygiene: cacheHygieneGuard({ onWarning: (n) => notices.push(n) }),
  });
}

const scope = { org: "clinic-a", uid: "patient-1" };
async function turns(rt: ReturnType<typeof runtime>, clock: ManualClock, n: number, gapMs: number) {
  for (let i = 0; i < n; i++) {
    const view = await rt.runner.runTurn({
      scope,
      sessionId: "visit-1",
      idempotencyKey: `k${i}`,
      input: `message ${i}`,
      intent: { tier: "balanced", sensitivity: "internal" },
    });
    expect(view.status).toBe("completed");
    clock.advance(gapMs);
  }
}

describe("cacheHygieneGuard through the runner and the Anthropic adapter", () => {
  it("five-minute writes on a session that speaks every eight minutes: ttl_mismatch on the stored context trail", async () => {
    const clock = new ManualClock();
    const notices: CacheHygieneNotice[] = [];
    const rt = runtime(clock, "5m", notices);
    server.enqueue(
      { body: coldAnswer("5m", 3_000) },
      { body: coldAnswer("5m", 3_000) },
      { body: coldAnswer("5m", 3_000) },
    );
    await turns(rt, clock, 3, 8 * 60_000);
    const { items } = await rt.stores.audit.query(scope, { trail: "context" });
    expect(items).toHaveLength(1);
    const session = sessionPseudonym(trailKey(KEY), scope, "visit-1");
    expect(items[0]).toMatchObject({
      trail: "context",
      sessionId: session,
      step: 1,
      field: "cache_hygiene:ttl_mismatch",
      decision: "warned",
    });
    // The host's own sink hears it too, by pseudonym and cause.
    expect(notices).toEqual([
      {
        cause: "ttl_mismatch",
        streak: 2,
        session,
        model: "claude-sonnet-4-5",
        at: clock.now() - 8 * 60_000,
      },
    ]);
  });

  it("one-hour writes read through at the same pace: silent", async () => {
    const clock = new ManualClock();
    const rt = runtime(clock, "1h");
    server.enqueue(
      { body: coldAnswer("1h", 3_000) },
      { body: coldAnswer("1h", 100, 3_000) },
      { body: coldAnswer("1h", 100, 3_100) },
    );
    await turns(rt, clock, 3, 8 * 60_000);
    const { items } = await rt.stores.audit.query(scope, { trail: "context" });
    expect(items).toEqual([]);
  });
});
