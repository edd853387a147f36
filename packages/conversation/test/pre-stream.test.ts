import {
  ConversationConfigError,
  conversationRootKey,
  type ConversationView,
} from "@alma-harness/conversation";
import { ProviderError } from "@alma-harness/core";
import { scriptedError, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, type SetupOptions, setup } from "./harness.js";

const rateLimited = () =>
  new ProviderError("anthropic HTTP 429 (rate_limit_error): slow down", {
    kind: "rate_limited",
    provider: "anthropic",
    status: 429,
    rejection: { kind: "anthropic_rate_limit_v1", provider: "anthropic", status: 429 },
  });

const released = (opts: SetupOptions = {}) =>
  setup({
    provider: "anthropic",
    ...opts,
    config: { releasePreStreamRejections: true, ...opts.config },
  });

function completedResult(view: ConversationView) {
  if (view.status !== "completed") throw new Error(`expected completed, got ${view.status}`);
  return view.result;
}

const withEvent = (key: string, id = "wa-1") => ({
  scope: SCOPE,
  sessionId: "s1",
  idempotencyKey: key,
  input: {
    role: "user" as const,
    blocks: [{ type: "text" as const, text: "Hi" }],
    meta: { event: { id, kind: "input" as const } },
  },
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

describe("a refused first call, released (spec: pre-stream-rejections)", () => {
  it("completes with terminalReason error and its failure, records nothing, frees the session", async () => {
    const t = released({ script: [scriptedError(rateLimited())] });
    const result = completedResult(await t.runner.runTurn(t.request("k1")));
    expect(result).toMatchObject({
      terminalReason: "error",
      stopReason: null,
      reply: [],
      toolCalls: [],
    });
    expect(result.failure).toMatchObject({ kind: "rate_limited", retryable: true });
    expect(await t.stores.sessions.load(SCOPE, "s1")).toMatchObject({ messages: [], revision: 0 });
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
    expect(t.uncertain).toEqual([]);
  });

  it("settles the refused call at zero in the journal and the receipt", async () => {
    const t = released({ script: [scriptedError(rateLimited())] });
    const result = completedResult(await t.runner.runTurn(t.request("k1")));
    expect(result.receipts.map((r) => [r.kind, r.usdMicros])).toEqual([["main", 0]]);
    const record = await t.stores.journal.get(
      SCOPE,
      `${conversationRootKey(SCOPE, "s1", "k1")}:main:1`,
    );
    expect(record?.state).toBe("completed");
  });

  it("the same key replays that outcome without a call; a new key sends the same input, recorded once", async () => {
    const t = released({ script: [scriptedError(rateLimited()), scriptedText("Hello!")] });
    const first = await t.runner.runTurn(withEvent("k1"));
    const again = await t.runner.runTurn(withEvent("k1"));
    expect(again).toEqual({ ...first, replayed: true });
    expect(t.model.calls).toBe(1);
    expect(completedResult(await t.runner.runTurn(withEvent("k2"))).reply).toEqual([
      { type: "text", text: "Hello!" },
    ]);
    const session = await t.stores.sessions.load(SCOPE, "s1");
    expect(session.messages.filter((m) => m.meta?.event?.id === "wa-1")).toHaveLength(1);
  });

  it("the stream's result is the same released view", async () => {
    const t = released({ script: [scriptedError(rateLimited())] });
    const stream = t.runner.streamTurn(t.request("k1"));
    const seen: string[] = [];
    for await (const event of stream) seen.push(event.type);
    expect(completedResult(await stream.result).terminalReason).toBe("error");
    expect(seen.at(-1)).toBe("result");
  });
});

describe("a refused call that stays uncertain", () => {
  it("without the flag: reconciliation_required, the cause names the proof, nothing persisted, session released", async () => {
    const t = setup({ provider: "anthropic", script: [scriptedError(rateLimited())] });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain).toEqual([
      expect.objectContaining({
        cause: "call:main:rejected:anthropic_rate_limit_v1",
        persisted: false,
        released: true,
      }),
    ]);
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1")))?.status).toBe(
      "reconciliation_required",
    );
  });

  it("on a later call, even with the flag", async () => {
    const t = released({
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "monday" } }),
        scriptedError(rateLimited()),
      ],
    });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:rejected:anthropic_rate_limit_v1"]);
  });

  it("a plain provider failure without a proof, even with the flag", async () => {
    const t = released({
      script: [
        scriptedError(
          new ProviderError("anthropic HTTP 529", {
            kind: "overloaded",
            provider: "anthropic",
            status: 529,
          }),
        ),
      ],
    });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:overloaded:none"]);
  });

  it("with nonzero usage reported before the refusal, even with the flag", async () => {
    const usage = {
      type: "usage" as const,
      evidence: { status: "known" as const, usage: { inputTokens: 3, outputTokens: 0 } },
    };
    const t = released({
      script: [scriptedError(rateLimited(), { at: 1, partial: { events: [usage] } })],
    });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:rate_limited:none"]);
  });

  it("the flag is a boolean", () => {
    expect(() => setup({ config: { releasePreStreamRejections: "yes" as never } })).toThrow(
      ConversationConfigError,
    );
  });
});
