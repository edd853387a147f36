import { processTrailKey, sessionPseudonym } from "@alma-harness/core";
import { createHmac } from "node:crypto";
import {
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  normalizeBudgetCaps,
  type PriceTable,
} from "@alma-harness/core";
import {
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  ManualClock,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import {
  type CallOptions,
  GovernedCalls,
  type GovernedCallsConfig,
  UncertainCallError,
} from "@alma-harness/execution";
import {
  ANTHROPIC_PRICES,
  createAnthropicClient,
  createOpenAIChatClient,
  createOpenAIResponsesClient,
  OPENAI_PRICES,
} from "@alma-harness/providers";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_TEXT, cassette, toSse } from "../../providers/test/helpers/fixtures.js";
import { serverPerTest } from "../../providers/test/helpers/server.js";

/**
 * Issue 19, finding 7 (OpenAI): `prompt_cache_key` from a scoped, pseudonymous key the host
 * derives (here a keyed HMAC of the tenant), stamped by the governed call, on the recorded
 * prompt-cache traffic (shared/fixtures/providers/openai/test_openai_chat_prompt_cache_e2e.yaml,
 * whose requests carry a `prompt_cache_key`).
 */
const server = serverPerTest();
const SECRET = "test-pseudonym-secret";
const pseudonym: NonNullable<GovernedCallsConfig["cacheKey"]> = ({ scope }) =>
  `t.${createHmac("sha256", SECRET).update(scope.org).digest("base64url").slice(0, 32)}`;
const PRICES: PriceTable = {
  version: "p",
  models: { ...OPENAI_PRICES.models, ...ANTHROPIC_PRICES.models },
};

function setup(cacheKey?: GovernedCallsConfig["cacheKey"]) {
  const settlements = new InMemoryCostSettlementStore();
  const journal = new InMemoryExecutionStore({ spend: settlements.spend });
  return new GovernedCalls({
    journal,
    settlements,
    spend: settlements.spend,
    prices: PRICES,
    caps: normalizeBudgetCaps({}),
    policyVersion: "p1",
    audit: new RecordingAuditLog(),
    clock: new ManualClock(),
    ...(cacheKey ? { cacheKey } : {}),
  });
}
const options = (calls: GovernedCalls): CallOptions => ({
  account: calls.account(),
  signal: new AbortController().signal,
  roundTimeoutMs: 60_000,
  route: { tier: "balanced", sensitivity: "internal" },
  seenCallIds: new Set(),
});
const identity = (org: string, sessionId: string, n: number) => ({
  scope: { org, uid: "u1" },
  sessionId,
  trailSession: sessionPseudonym(processTrailKey(), { org, uid: "u1" }, sessionId),
  rootKey: `r${n}`,
  turnId: `t${n}`,
  operationId: `t${n}:main:1`,
  kind: "main" as const,
});
const request = (model: string): ModelRequest => ({
  model,
  system: [],
  messages: [{ role: "user", blocks: [{ type: "text", text: "hi" }] }],
  tools: [],
  maxOutputTokens: 100,
});
const choice = (clientId: string, model: string): ModelChoice => ({
  clientId,
  model,
  maxOutputTokens: 100,
  cache: false,
});

/** The recorded second exchange (a cache hit) as a Chat Completions stream. */
function recordedHit(): string {
  const body = cassette("openai/test_openai_chat_prompt_cache_e2e.yaml")[1]?.response
    .parsed_body as { usage: unknown; model: string };
  const chunk = {
    id: "c",
    object: "chat.completion.chunk",
    model: body.model,
    choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }],
  };
  return toSse(
    [JSON.stringify(chunk), JSON.stringify({ ...chunk, choices: [], usage: body.usage })],
    { named: false, done: true },
  );
}

describe("prompt_cache_key (issue 19, finding 7)", () => {
  it("is the host's pseudonymous tenant key: the same across a tenant's sessions, never the raw id", async () => {
    const calls = setup(pseudonym);
    const openai: ModelClient = createOpenAIChatClient({
      apiKey: "k",
      baseURL: `${server.url}/v1`,
    });
    server.enqueue({ body: recordedHit() }, { body: recordedHit() }, { body: recordedHit() });
    const outcome = await calls.run(
      identity("acme", "s1", 1),
      openai,
      choice("openai", "gpt-5.6-sol"),
      request("gpt-5.6-sol"),
      options(calls),
    );
    await calls.run(
      identity("acme", "s2", 2),
      openai,
      choice("openai", "gpt-5.6-sol"),
      request("gpt-5.6-sol"),
      options(calls),
    );
    await calls.run(
      identity("globex", "s1", 3),
      openai,
      choice("openai", "gpt-5.6-sol"),
      request("gpt-5.6-sol"),
      options(calls),
    );
    const keys = server.requests.map(
      (r) => (r.body as { prompt_cache_key?: string }).prompt_cache_key,
    );
    expect(keys[0]).toMatch(/^t\.[A-Za-z0-9_-]{32}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).not.toBe(keys[0]);
    expect(JSON.stringify(server.requests.map((r) => r.body))).not.toContain("acme");
    if (outcome.status !== "settled") throw new Error(outcome.status);
    expect(outcome.output.evidence).toMatchObject({
      status: "known",
      usage: { cacheReadTokens: 4012 },
    });
  });

  it("Responses carries it too; Anthropic (prefix-keyed, no such field) does not; no hook, no key", async () => {
    const calls = setup(pseudonym);
    const responsesChunks = [
      { type: "response.created", response: { id: "r", status: "in_progress" } },
      {
        type: "response.output_text.delta",
        item_id: "m",
        output_index: 0,
        content_index: 0,
        delta: "ok",
      },
      {
        type: "response.completed",
        response: {
          id: "r",
          status: "completed",
          usage: {
            input_tokens: 10,
            output_tokens: 1,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 0 },
          },
          service_tier: "default",
        },
      },
    ];
    server.enqueue(
      {
        body: toSse(
          responsesChunks.map((c) => JSON.stringify(c)),
          { named: true },
        ),
      },
      { body: ANTHROPIC_TEXT },
      { body: recordedHit() },
    );
    await calls.run(
      identity("acme", "s1", 1),
      createOpenAIResponsesClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
      choice("openai-responses", "gpt-4.1"),
      request("gpt-4.1"),
      options(calls),
    );
    await calls.run(
      identity("acme", "s1", 2),
      createAnthropicClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
      choice("anthropic", "claude-haiku-4-5"),
      request("claude-haiku-4-5"),
      options(calls),
    );
    const plain = setup();
    await plain.run(
      identity("acme", "s1", 3),
      createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` }),
      choice("openai", "gpt-5.6-sol"),
      request("gpt-5.6-sol"),
      options(plain),
    );
    const keys = server.requests.map(
      (r) => (r.body as { prompt_cache_key?: string }).prompt_cache_key,
    );
    expect(keys[0]).toMatch(/^t\./);
    expect(keys.slice(1)).toEqual([undefined, undefined]);
  });

  it("a key the wire cannot take is refused before any byte; a hook that throws makes the call uncertain", async () => {
    const openai = createOpenAIChatClient({ apiKey: "k", baseURL: `${server.url}/v1` });
    const long = setup(() => "k".repeat(65));
    await expect(
      long.run(
        identity("acme", "s1", 1),
        openai,
        choice("openai", "gpt-5.6-sol"),
        request("gpt-5.6-sol"),
        options(long),
      ),
    ).rejects.toMatchObject({ cause: { kind: "unsupported" } });
    const limit = setup(() => "k".repeat(64));
    server.enqueue({ body: recordedHit() });
    await expect(
      limit.run(
        identity("acme", "s1", 2),
        openai,
        choice("openai", "gpt-5.6-sol"),
        request("gpt-5.6-sol"),
        options(limit),
      ),
    ).resolves.toMatchObject({ status: "settled" });
    const failing = setup(() => {
      throw new Error("no secret");
    });
    await expect(
      failing.run(
        identity("acme", "s1", 3),
        openai,
        choice("openai", "gpt-5.6-sol"),
        request("gpt-5.6-sol"),
        options(failing),
      ),
    ).rejects.toBeInstanceOf(UncertainCallError);
    expect(server.requests).toHaveLength(1);
  });
});
