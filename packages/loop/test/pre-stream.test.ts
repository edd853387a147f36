import { type PriceTable, ProviderError, type RejectionProof } from "@alma-harness/core";
import { createEngine, EngineConfigError } from "@alma-harness/loop";
import {
  scriptedError,
  scriptedEvents,
  scriptedText,
  scriptedToolCall,
  scriptedUsage,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, log, PRICES, SCOPE, tool, uncertain } from "./harness.js";

const RATE: RejectionProof = {
  kind: "anthropic_rate_limit_v1",
  provider: "anthropic",
  status: 429,
};
const OVERLOAD: RejectionProof = {
  kind: "anthropic_overloaded_v1",
  provider: "anthropic",
  status: 529,
};

function refused(
  proof: RejectionProof | null = RATE,
  kind: "rate_limited" | "overloaded" = "rate_limited",
): ProviderError {
  return new ProviderError(`anthropic HTTP ${proof?.status ?? 429}: refused`, {
    kind,
    provider: "anthropic",
    status: proof?.status ?? 429,
    ...(proof ? { rejection: proof } : {}),
  });
}

/** An Anthropic main client with the release flag on, unless told otherwise. */
const anthropic = (opts: Parameters<typeof harness>[0] = {}) =>
  harness({ provider: "anthropic", releasePreStreamRejections: true, ...opts });

describe("an attested pre-stream refusal of the first call, released (spec: pre-stream-rejections)", () => {
  it("ends completed with terminalReason error, its failure, an empty reply, stopReason null, and records nothing", async () => {
    const h = anthropic({ script: [scriptedError(refused())] });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(result.terminalReason).toBe("error");
    expect(result.failure).toEqual({
      kind: "rate_limited",
      retryable: true,
      provider: "anthropic",
      status: 429,
      message: "the provider refused the call before any stream (anthropic_rate_limit_v1)",
    });
    expect(result.reply).toEqual([]);
    expect(result.stopReason).toBeNull();
    expect(result.toolCalls).toEqual([]);
    expect(log(outcome)).toEqual([]);
  });

  it("settles the refused call at zero: a zero receipt, a completed journal record, a zero cost event", async () => {
    const h = anthropic({ script: [scriptedError(refused())] });
    const result = completed(await h.run());
    expect(result.receipts).toHaveLength(1);
    expect(result.receipts[0]).toMatchObject({
      kind: "main",
      usdMicros: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    expect(result.costMicros).toBe(0);
    const record = await h.journal.get(SCOPE, "turn-1:main:1");
    expect(record?.state).toBe("completed");
    expect(record?.evidence).toEqual({
      status: "known",
      usage: { inputTokens: 0, outputTokens: 0 },
    });
    expect(h.trail("cost").map((e) => e.usdMicros)).toEqual([0]);
  });

  it("an attested overload releases the same way, failure kind overloaded", async () => {
    const h = anthropic({ script: [scriptedError(refused(OVERLOAD, "overloaded"))] });
    expect(completed(await h.run()).failure).toMatchObject({ kind: "overloaded", retryable: true });
  });

  it("an OpenAI rate-limit proof from an openai client releases too", async () => {
    const error = new ProviderError("openai HTTP 429", {
      kind: "rate_limited",
      provider: "openai",
      status: 429,
      rejection: { kind: "openai_rate_limit_v1", provider: "openai", status: 429 },
    });
    const h = harness({
      provider: "openai",
      releasePreStreamRejections: true,
      script: [scriptedError(error)],
    });
    expect(completed(await h.run()).terminalReason).toBe("error");
  });

  it("turn:end still runs, and its failure makes the turn uncertain with nothing recorded", async () => {
    const ends: string[] = [];
    const h = anthropic({
      script: [scriptedError(refused())],
      hooks: {
        "turn:end": (e) => {
          ends.push(e.outcome);
          if (e.outcome === "completed") throw new Error("end hook failed");
        },
      },
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("hook:turn:end");
    expect(outcome.messages).toEqual([]);
    expect(ends).toEqual(["completed"]);
  });
});

describe("when the refusal stays uncertain", () => {
  it("without the flag: reconciliation_required, cause call:main:rejected:<proof>, still settled at zero", async () => {
    const h = anthropic({ releasePreStreamRejections: false, script: [scriptedError(refused())] });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:rejected:anthropic_rate_limit_v1");
    expect(outcome.failure).toMatchObject({ kind: "rate_limited", retryable: true });
    expect(outcome.receipts.map((r) => r.usdMicros)).toEqual([0]);
    expect((await h.journal.get(SCOPE, "turn-1:main:1"))?.state).toBe("completed");
    expect(log(outcome)).toHaveLength(1);
  });

  it("on a later call: the first step ran a tool, the second call is refused", async () => {
    const h = anthropic({
      tools: [echoTool],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedError(refused()),
      ],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:rejected:anthropic_rate_limit_v1");
    expect(outcome.receipts.map((r) => r.usdMicros)).toEqual([expect.any(Number), 0]);
  });

  it("after the last-call notice: the first call is also the last and advertises tools", async () => {
    const h = anthropic({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedError(refused())],
    });
    expect(uncertain(await h.run()).cause).toBe("call:main:rejected:anthropic_rate_limit_v1");
  });

  it("the first call without tools on a one-call turn carries no notice and releases", async () => {
    const h = anthropic({ limits: { maxCalls: 1 }, script: [scriptedError(refused())] });
    expect(completed(await h.run()).terminalReason).toBe("error");
  });

  it("in a child: a direct call refused inside a handler poisons the turn with its cause", async () => {
    const ask = tool(
      "ask",
      async (_input, ctx) =>
        (await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "hi" })).text,
    );
    const h = anthropic({
      tools: [ask],
      policy: () => ({ clientId: "fake", model: "fake-main", maxOutputTokens: 256, cache: false }),
      script: [scriptedToolCall({ id: "c1", name: "ask" }), scriptedError(refused())],
    });
    expect(uncertain(await h.run()).cause).toBe("call:direct:rejected:anthropic_rate_limit_v1");
  });

  it("without a proof (a spend-limit 429): an ordinary provider failure, usage unknown", async () => {
    const h = anthropic({ script: [scriptedError(refused(null))] });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:main:rate_limited:none");
    expect(outcome.receipts).toEqual([]);
    expect((await h.journal.get(SCOPE, "turn-1:main:1"))?.state).toBe("received");
  });

  it("with nonzero usage reported before the error: the proof is contradicted", async () => {
    const usage = scriptedEvents([
      { type: "usage", evidence: { status: "known", usage: { inputTokens: 5, outputTokens: 0 } } },
    ]);
    const h = anthropic({ script: [scriptedError(refused(), { at: 1, partial: usage })] });
    expect(uncertain(await h.run()).cause).toBe("call:main:rate_limited:none");
  });

  it("with zero usage reported before the error: still attested", async () => {
    const usage = scriptedEvents([
      { type: "usage", evidence: { status: "known", usage: { inputTokens: 0, outputTokens: 0 } } },
    ]);
    const h = anthropic({ script: [scriptedError(refused(), { at: 1, partial: usage })] });
    expect(completed(await h.run()).terminalReason).toBe("error");
  });

  it("after streamed text: not a pre-stream refusal", async () => {
    const h = anthropic({
      script: [
        scriptedError(refused(), {
          at: 1,
          partial: scriptedUsage({ inputTokens: 0, outputTokens: 0 }, scriptedText("par")),
        }),
      ],
    });
    expect(uncertain(await h.run()).cause).toBe("call:main:rate_limited:none");
  });

  it("from a client of another provider: the proof is not the client's to give", async () => {
    const h = harness({ releasePreStreamRejections: true, script: [scriptedError(refused())] });
    expect(uncertain(await h.run()).cause).toBe("call:main:rate_limited:none");
  });

  it("at the batch tier: never attested", async () => {
    const prices: PriceTable = {
      ...PRICES,
      models: {
        ...PRICES.models,
        "fake-main": {
          rates: { input: 3, output: 15 },
          tiers: { batch: { input: 1.5, output: 7.5 } },
        },
      },
    };
    const h = anthropic({
      prices,
      choice: { serviceTier: "batch" },
      script: [scriptedError(refused())],
    });
    expect(uncertain(await h.run()).cause).toBe("call:main:rate_limited:none");
  });

  it("a cancelled turn is cancelled, whatever the provider said", async () => {
    const controller = new AbortController();
    const h = anthropic({
      script: [
        { events: [], error: { at: 0, error: refused() }, expect: () => controller.abort() },
      ],
    });
    expect(uncertain(await h.run({ signal: controller.signal })).cause).toBe("cancelled");
  });
});

describe("configuration", () => {
  it("releasePreStreamRejections must be a boolean", () => {
    const h = harness();
    expect(() =>
      createEngine({
        clients: [h.model],
        policy: {
          resolve: () => ({
            clientId: "fake",
            model: "fake-main",
            maxOutputTokens: 1,
            cache: false,
          }),
        },
        limits: { maxCalls: 1 },
        calls: h.calls,
        audit: h.audit,
        clock: h.clock,
        ids: { next: () => "x" },
        releasePreStreamRejections: "yes" as never,
      }),
    ).toThrow(EngineConfigError);
  });
});
