import { processTrailKey, sessionPseudonym } from "@alma-harness/core";
import {
  type ModelChoice,
  type ModelRequest,
  normalizeBudgetCaps,
  ProviderError,
} from "@alma-harness/core";
import {
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  ManualClock,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import { type CallOptions, GovernedCalls, UncertainCallError } from "@alma-harness/execution";
import {
  createOpenRouterClient,
  OPENROUTER_PRICES,
  type OpenRouterRouting,
} from "@alma-harness/providers";
import { describe, expect, it } from "vitest";
import { cassette } from "../../providers/test/helpers/fixtures.js";
import { serverPerTest } from "../../providers/test/helpers/server.js";

/**
 * Issue 19, finding 4, through the governed call with the real OpenRouter adapter on recorded
 * traffic: data above `internal` needs a data-protecting routing preference (refused before any
 * claim or byte otherwise), the preference goes on the wire, and the upstream that served the call
 * is in the usage evidence and on the routing trail.
 */
const server = serverPerTest();
const MODEL = "anthropic/claude-sonnet-4.5";
const CHOICE: ModelChoice = {
  clientId: "openrouter",
  model: MODEL,
  maxOutputTokens: 1024,
  cache: false,
};
const REQUEST: ModelRequest = {
  model: MODEL,
  system: [],
  messages: [{ role: "user", blocks: [{ type: "text", text: "What is 2+2?" }] }],
  tools: [],
  maxOutputTokens: 1024,
};
const SCOPE = { org: "acme", uid: "u1" } as const;

function setup() {
  const settlements = new InMemoryCostSettlementStore();
  const journal = new InMemoryExecutionStore({ spend: settlements.spend });
  const audit = new RecordingAuditLog();
  const calls = new GovernedCalls({
    journal,
    settlements,
    spend: settlements.spend,
    prices: OPENROUTER_PRICES,
    caps: normalizeBudgetCaps({}),
    policyVersion: "p1",
    audit,
    clock: new ManualClock(),
  });
  return { calls, journal, audit };
}

const identity = (n: number) => ({
  scope: SCOPE,
  sessionId: "s1",
  trailSession: sessionPseudonym(processTrailKey(), SCOPE, "s1"),
  rootKey: "r1",
  turnId: "t1",
  operationId: `t1:main:${n}`,
  kind: "main" as const,
});
const options = (
  calls: GovernedCalls,
  sensitivity: CallOptions["route"]["sensitivity"],
): CallOptions => ({
  account: calls.account(),
  signal: new AbortController().signal,
  roundTimeoutMs: 60_000,
  route: { tier: "balanced", sensitivity },
  seenCallIds: new Set(),
});
const client = (providerRouting?: OpenRouterRouting) =>
  createOpenRouterClient({
    apiKey: "sk-or-test",
    baseURL: `${server.url}/api/v1`,
    ...(providerRouting ? { providerRouting } : {}),
  });
const recorded = () =>
  cassette("openrouter/test_openrouter_streaming_reasoning.yaml")[0]?.response.body?.string ?? "";

describe("OpenRouter data policy through the governed call", () => {
  // Seed 002, "A refused request": the adapter's refusal leaves the claim not_dispatched (invalid).
  it("refuses confidential data on OpenRouter's default policy before any byte: the claim not_dispatched (invalid)", async () => {
    const { calls, journal } = setup();
    server.enqueue({ body: recorded() });
    const run = calls.run(identity(1), client(), CHOICE, REQUEST, options(calls, "confidential"));
    await expect(run).rejects.toBeInstanceOf(UncertainCallError);
    const error = await run.catch((e: UncertainCallError) => e.cause);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ kind: "unsupported", provider: "openrouter" });
    expect(String((error as Error).message)).toContain('zdr: true or data_collection: "deny"');
    expect(server.requests).toHaveLength(0);
    expect(await journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "invalid",
    });
  });

  it("sends the preference, settles, and records the serving upstream in the evidence and on the routing trail", async () => {
    const { calls, audit } = setup();
    server.enqueue({ body: recorded(), split: "awkward" });
    const outcome = await calls.run(
      identity(1),
      client({ zdr: true, only: ["anthropic", "google-vertex"], allow_fallbacks: false }),
      CHOICE,
      REQUEST,
      options(calls, "restricted"),
    );
    expect(server.requests[0]?.body).toMatchObject({
      model: MODEL,
      provider: { zdr: true, only: ["anthropic", "google-vertex"], allow_fallbacks: false },
    });
    if (outcome.status !== "settled") throw new Error(outcome.status);
    expect(outcome.output.evidence).toMatchObject({
      status: "known",
      upstream: "google",
      usage: { inputTokens: 43, outputTokens: 36 },
    });
    const served = audit.trail("routing").filter((e) => e.servedTier !== undefined);
    expect(served).toEqual([
      expect.objectContaining({ upstream: "google", sensitivity: "restricted" }),
    ]);
  });

  it("a per-call preference sees the route's sensitivity: public data rides without one, confidential with data_collection deny", async () => {
    const { calls } = setup();
    server.enqueue({ body: recorded() }, { body: recorded() });
    const routing: OpenRouterRouting = ({ sensitivity }) =>
      sensitivity === "public" ? undefined : { data_collection: "deny" };
    await calls.run(identity(1), client(routing), CHOICE, REQUEST, options(calls, "public"));
    await calls.run(identity(2), client(routing), CHOICE, REQUEST, options(calls, "confidential"));
    expect(server.requests[0]?.body).not.toHaveProperty("provider");
    expect(server.requests[1]?.body).toMatchObject({ provider: { data_collection: "deny" } });
  });
});
