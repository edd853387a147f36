import { priceUsage } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_PRICES, createOpenRouterClient, OPENROUTER_PRICES } from "../src/index.js";
import { baseRequest, collect, terminal, usageEvidence, userText } from "./helpers/collect.js";
import { cassette } from "./helpers/fixtures.js";
import { serverPerTest } from "./helpers/server.js";

/**
 * Issue 19, finding 5: the long-context band on OpenRouter's Sonnet 4.5 row, and `usage.cost`
 * (openrouter.ai/docs/use-cases/usage-accounting: the charge, in the last SSE message) checked
 * against the table, on recorded traffic.
 */
const server = serverPerTest();
const MODEL = "anthropic/claude-sonnet-4.5";
const client = () =>
  createOpenRouterClient({ apiKey: "sk-or-test", baseURL: `${server.url}/api/v1` });
const recorded = () =>
  cassette("openrouter/test_openrouter_streaming_reasoning.yaml")[0]?.response.body?.string ?? "";
const request = () => baseRequest(MODEL, { messages: [userText("What is 2+2?")] });

describe("OpenRouter prices", () => {
  it("Sonnet 4.5 prices a >200K prompt in its long-context band, as the Anthropic row does (was $0.78 for $1.545)", () => {
    const usage = { inputTokens: 250_000, outputTokens: 2_000 };
    const viaRouter = priceUsage(OPENROUTER_PRICES, MODEL, usage);
    expect(viaRouter).toMatchObject({ status: "priced", usdMicros: 1_545_000 });
    expect(viaRouter).toMatchObject({
      usdMicros: (priceUsage(ANTHROPIC_PRICES, "claude-sonnet-4-5", usage) as { usdMicros: number })
        .usdMicros,
    });
    // at the limit: 200,000 prompt tokens stay in the base band
    expect(
      priceUsage(OPENROUTER_PRICES, MODEL, { inputTokens: 200_000, outputTokens: 0 }),
    ).toMatchObject({ usdMicros: 600_000 });
    expect(
      priceUsage(OPENROUTER_PRICES, MODEL, { inputTokens: 200_001, outputTokens: 0 }),
    ).toMatchObject({ usdMicros: 1_200_006 });
  });

  it("a reported cost the table reproduces keeps the evidence known", async () => {
    server.enqueue({ body: recorded() });
    const events = await collect(client(), request());
    expect(server.requests[0]?.body).toMatchObject({
      model: MODEL,
      stream_options: { include_usage: true },
    });
    expect(recorded()).toContain('"cost":0.000669');
    expect(usageEvidence(events)).toMatchObject({
      status: "known",
      usage: { inputTokens: 43, outputTokens: 36 },
    });
    expect(terminal(events).usage).toMatchObject({ inputTokens: 43, outputTokens: 36 });
  });

  it("a reported cost the table does not reproduce makes the call unpriced, naming both amounts; BYOK is not compared", async () => {
    const doubled = recorded().replace('"cost":0.000669', '"cost":0.001338');
    const byok = doubled.replace('"is_byok":false', '"is_byok":true');
    server.enqueue({ body: doubled }, { body: byok });
    const mismatch = usageEvidence(await collect(client(), request()));
    expect(mismatch).toMatchObject({
      status: "unpriced",
      usage: { inputTokens: 43, outputTokens: 36 },
      upstream: "google",
    });
    expect((mismatch as { reason: string }).reason).toBe(
      "OpenRouter billed 1338 µ$ (usage.cost) but openrouter-2026-11-29 prices the call at 669 µ$",
    );
    expect(usageEvidence(await collect(client(), request()))).toMatchObject({ status: "known" });
  });

  it("the tolerance absorbs rounding of the reported float only: at the limit and one over", async () => {
    // 669 µ$ priced; the tolerance is max(2 µ$, 1%) = 7 µ$.
    server.enqueue(
      { body: recorded().replace('"cost":0.000669', '"cost":0.000676') },
      { body: recorded().replace('"cost":0.000669', '"cost":0.000677') },
    );
    expect(usageEvidence(await collect(client(), request()))).toMatchObject({ status: "known" });
    expect(usageEvidence(await collect(client(), request()))).toMatchObject({ status: "unpriced" });
  });
});
