import { normalizePriceTable, priceUsage } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { ANTHROPIC_PRICES, OPENAI_PRICES, OPENROUTER_PRICES } from "../src/index.js";
import { anthropicEvidence } from "../src/anthropic/usage.js";
import { chatEvidence } from "../src/openai-chat/usage.js";
import { responsesEvidence } from "../src/openai-responses/usage.js";
import { openaiServedTier } from "../src/shared/usage.js";
import { cassette } from "./helpers/fixtures.js";

type Body = { usage: Record<string, unknown> };
const usageOf = (name: string, i: number) =>
  (cassette(name)[i]!.response.parsed_body as Body).usage;

describe("usage normalization on recorded usage objects", () => {
  it("Anthropic: input excludes cache; writes split by TTL; reads separate", () => {
    const raw = usageOf("anthropic/test_anthropic_cache_real_api.yaml", 0);
    const evidence = anthropicEvidence(raw, true, "5m");
    expect(evidence.status).toBe("known");
    const usage = (evidence as unknown as { usage: Record<string, unknown> }).usage;
    expect(usage.inputTokens).toBe(raw.input_tokens);
    expect(usage.cacheWrite5mTokens).toBe(
      (raw.cache_creation as Record<string, number>).ephemeral_5m_input_tokens,
    );
    expect(usage.cacheWrite1hTokens).toBe(0);
    expect(usage.cacheReadTokens).toBe(raw.cache_read_input_tokens);
  });

  it("Anthropic: writes without a TTL split go to the requested TTL, or are unpriced", () => {
    const raw = {
      input_tokens: 5,
      output_tokens: 2,
      cache_creation_input_tokens: 100,
      cache_read_input_tokens: 0,
    };
    expect(anthropicEvidence(raw, true, "1h")).toEqual({
      status: "known",
      usage: { inputTokens: 5, outputTokens: 2, cacheWrite1hTokens: 100, cacheReadTokens: 0 },
    });
    expect(anthropicEvidence(raw, true, undefined)).toMatchObject({
      status: "unpriced",
      reason: "cache writes reported without their TTL split",
    });
  });

  it("Anthropic: an unpriced tier or region, missing final usage, and thinking tokens", () => {
    expect(
      anthropicEvidence(
        { input_tokens: 1, output_tokens: 1, service_tier: "priority" },
        true,
        undefined,
      ),
    ).toMatchObject({ status: "known", usage: { serviceTier: "priority" } });
    expect(
      anthropicEvidence(
        { input_tokens: 1, output_tokens: 1, service_tier: "turbo" },
        true,
        undefined,
      ),
    ).toMatchObject({ status: "unpriced" });
    expect(
      anthropicEvidence(
        { input_tokens: 1, output_tokens: 1, inference_geo: "us" },
        true,
        undefined,
      ),
    ).toMatchObject({ status: "unpriced" });
    expect(anthropicEvidence({ input_tokens: 1, output_tokens: 1 }, false, undefined)).toEqual({
      status: "unknown",
    });
    expect(
      anthropicEvidence(
        { input_tokens: 1, output_tokens: 10, output_tokens_details: { thinking_tokens: 20 } },
        true,
        undefined,
      ),
    ).toMatchObject({ status: "unpriced" });
  });

  it("OpenAI Responses: the recorded cache write and read", () => {
    const first = usageOf("openai/test_openai_responses_prompt_cache_e2e.yaml", 0);
    const second = usageOf("openai/test_openai_responses_prompt_cache_e2e.yaml", 1);
    expect(responsesEvidence(first, "default", undefined)).toMatchObject({
      status: "known",
      usage: { cacheWrite5mTokens: 4012, cacheReadTokens: 0, serviceTier: "standard" },
    });
    expect(responsesEvidence(second, "default", undefined)).toMatchObject({
      status: "known",
      usage: { cacheWrite5mTokens: 0, cacheReadTokens: 4012 },
    });
    const input = (first.input_tokens as number) - 4012;
    expect(
      (responsesEvidence(first, "default", undefined) as { usage: { inputTokens: number } }).usage
        .inputTokens,
    ).toBe(input);
    expect(responsesEvidence(undefined, "default", undefined)).toEqual({ status: "unknown" });
  });

  it("served tiers map to the neutral set; an unknown one is unpriced", () => {
    expect(openaiServedTier("default")).toEqual({ tier: "standard" });
    expect(openaiServedTier("flex")).toEqual({ tier: "flex" });
    expect(openaiServedTier("scale").unresolved).toMatch(/scale/);
    expect(
      chatEvidence({ prompt_tokens: 3, completion_tokens: 1 }, openaiServedTier("scale")),
    ).toMatchObject({ status: "unpriced" });
  });
});

describe("price tables", () => {
  it("are valid core PriceTables with a version", () => {
    for (const table of [ANTHROPIC_PRICES, OPENAI_PRICES, OPENROUTER_PRICES]) {
      expect(normalizePriceTable(table)).toEqual(table);
      expect(table.version).toMatch(/-2026-11-29$/);
    }
  });

  it("OpenRouter rows reproduce the cost OpenRouter reported on every recorded call", () => {
    const cases: [string, number, string][] = [
      [
        "openrouter/test_openrouter_cache_messages_anthropic_real_api.yaml",
        0,
        "anthropic/claude-sonnet-4.6",
      ],
      [
        "openrouter/test_openrouter_cache_messages_anthropic_real_api.yaml",
        1,
        "anthropic/claude-sonnet-4.6",
      ],
      ["openrouter/test_openrouter_usage.yaml", 1, "openai/gpt-5-mini"],
    ];
    for (const [name, i, model] of cases) {
      const raw = usageOf(name, i);
      const evidence = chatEvidence(raw, {});
      expect(evidence.status).toBe("known");
      const priced = priceUsage(
        OPENROUTER_PRICES,
        model,
        (evidence as unknown as { usage: never }).usage,
      );
      expect(priced).toMatchObject({ status: "priced", priceVersion: "openrouter-2026-11-29" });
      expect((priced as { usdMicros: number }).usdMicros).toBe(
        Math.ceil(Math.round((raw.cost as number) * 1e12) / 1e6),
      );
    }
  });

  it("prices Anthropic usage with 1h writes, web searches and the batch tier; fails closed elsewhere", () => {
    const usage = {
      inputTokens: 1000,
      outputTokens: 100,
      cacheWrite1hTokens: 1000,
      cacheReadTokens: 1000,
      webSearchRequests: 2,
    };
    // 1000×3 + 100×15 + 1000×6 + 1000×0.3 = 10,800 µ$ of tokens; 2 searches = 20,000 µ$.
    expect(priceUsage(ANTHROPIC_PRICES, "claude-sonnet-4-6", usage)).toMatchObject({
      status: "priced",
      usdMicros: 30800,
    });
    expect(
      priceUsage(ANTHROPIC_PRICES, "claude-sonnet-4-6", { ...usage, serviceTier: "batch" }),
    ).toMatchObject({ status: "priced", usdMicros: 25400 });
    expect(
      priceUsage(ANTHROPIC_PRICES, "claude-sonnet-4-6", { ...usage, serviceTier: "priority" }),
    ).toMatchObject({ status: "unpriced", missing: "tier" });
    expect(priceUsage(ANTHROPIC_PRICES, "claude-unknown-9", usage)).toMatchObject({
      status: "unpriced",
      missing: "model",
    });
    expect(
      priceUsage(ANTHROPIC_PRICES, "claude-haiku-5-5", { inputTokens: 200_000, outputTokens: 0 }),
    ).toMatchObject({ status: "priced", usdMicros: 100_000 });
  });

  it("prices OpenAI cache writes on gpt-5.6 and refuses a search where the rule is not per call", () => {
    expect(
      priceUsage(OPENAI_PRICES, "gpt-5.6-sol", {
        inputTokens: 8,
        outputTokens: 0,
        cacheWrite5mTokens: 4012,
      }),
    ).toMatchObject({ status: "priced", usdMicros: 25115 });
    expect(
      priceUsage(OPENAI_PRICES, "gpt-5", {
        inputTokens: 0,
        outputTokens: 0,
        cacheWrite5mTokens: 10,
      }),
    ).toMatchObject({ status: "unpriced", missing: "cache_write_5m" });
    expect(
      priceUsage(OPENAI_PRICES, "gpt-4.1-mini", {
        inputTokens: 1,
        outputTokens: 1,
        webSearchRequests: 1,
      }),
    ).toMatchObject({ status: "unpriced", missing: "web_search" });
    expect(
      priceUsage(OPENAI_PRICES, "gpt-5", {
        inputTokens: 1_000_000,
        outputTokens: 0,
        serviceTier: "flex",
      }),
    ).toMatchObject({ status: "priced", usdMicros: 625_000 });
  });
});
