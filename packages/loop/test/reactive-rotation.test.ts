import { type Block, type Msg, ProviderError } from "@alma-harness/core";
import { MANUAL_CLOCK_START } from "@alma-harness/core/testing";
import type { LongContextPolicy } from "@alma-harness/loop";
import {
  scriptedError,
  scriptedEvents,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, log, tool, uncertain } from "./harness.js";

const NOW = MANUAL_CLOCK_START;
const text = (t: string): Block => ({ type: "text", text: t });
/** A warm session (nothing rotates at the start): four messages, the newest recorded now. */
const HISTORY: readonly Msg[] = [
  { role: "user", blocks: [text("u1")], meta: { turn: "old", at: NOW } },
  { role: "assistant", blocks: [text("a1")], meta: { turn: "old", at: NOW } },
  { role: "user", blocks: [text("u2")], meta: { turn: "old", at: NOW } },
  { role: "assistant", blocks: [text("a2")], meta: { turn: "old", at: NOW } },
];
const POLICY: LongContextPolicy = {
  rotateAtTokens: 1_000_000,
  keepLastMessages: 2,
  summaryTier: "fast",
};
const tooLong = (provider = "anthropic") =>
  new ProviderError(`${provider} HTTP 400: prompt is too long`, {
    kind: "context_window",
    provider,
    status: 400,
  });
const texts = (messages: readonly Msg[]) =>
  messages.map((m) => m.blocks.map((b) => (b.type === "text" ? b.text : b.type)).join("|"));
// Seed 002, "When an attested refusal finishes without another rotation … result.terminalReason is
// completed, result.stopReason is context_window_exceeded, and result.reply.blocks is empty."
const EXCEEDED = {
  reply: [],
  stopReason: "context_window_exceeded",
  terminalReason: "completed",
};

function reactive(opts: Parameters<typeof harness>[0] = {}) {
  return harness({
    provider: "anthropic",
    longContext: POLICY,
    smallScript: [scriptedText("They talked.")],
    ...opts,
  });
}

describe("one reactive rotation on an attested context refusal (spec: safe-context-rejection-rotation)", () => {
  it("settles the refused call at zero, summarizes, and retries once from [summary, tail, input]", async () => {
    const h = reactive({ script: [scriptedError(tooLong()), scriptedText("Answer.")] });
    const outcome = await h.run({ history: HISTORY });
    const result = completed(outcome);
    expect(result.reply).toEqual([text("Answer.")]);
    expect(texts(h.model.requests[0]?.messages ?? [])).toEqual(["u1", "a1", "u2", "a2", "Hello"]);
    expect(texts(h.model.requests[1]?.messages ?? []).slice(1)).toEqual(["u2", "a2", "Hello"]);
    expect(h.model.requests[1]?.messages[0]?.meta?.rotation).toEqual({ replaces: 2 });
    expect(result.receipts.map((r) => [r.kind, r.operationId, r.usdMicros > 0])).toEqual([
      ["main", "turn-1:main:1", false],
      ["summary", "turn-1:summary:2", true],
      ["main", "turn-1:main:3", true],
    ]);
    expect(h.trail("routing").find((e) => e.kind === "summary")?.parentCallId).toBe(
      "turn-1:main:1",
    );
    expect(texts(log(outcome))).toEqual([
      expect.stringContaining("They talked."),
      "u2",
      "a2",
      "Hello",
      "Answer.",
    ]);
    // The replacement call takes the refused step's place.
    expect(
      h
        .trail("lifecycle")
        .filter((e) => e.action === "model.request")
        .map((e) => e.step),
    ).toEqual([1, 1]);
  });

  it("a second refusal ends the turn completed with context_window_exceeded and an empty reply", async () => {
    const h = reactive({ script: [scriptedError(tooLong()), scriptedError(tooLong())] });
    const outcome = await h.run({ history: HISTORY });
    expect(completed(outcome)).toMatchObject(EXCEEDED);
    expect(completed(outcome).receipts.map((r) => r.kind)).toEqual(["main", "summary", "main"]);
    expect(texts(log(outcome)).slice(1)).toEqual(["u2", "a2", "Hello"]);
  });

  it("fewer than two calls left: context_window_exceeded, no summary", async () => {
    const h = reactive({ limits: { maxCalls: 2 }, script: [scriptedError(tooLong())] });
    expect(completed(await h.run({ history: HISTORY }))).toMatchObject(EXCEEDED);
    expect(h.small.calls).toBe(0);
    const two = reactive({
      limits: { maxCalls: 3 },
      script: [scriptedError(tooLong()), scriptedText("Answer.")],
    });
    expect(completed(await two.run({ history: HISTORY })).reply).toEqual([text("Answer.")]);
  });

  it("no policy, or no removable head: context_window_exceeded at once, the input kept", async () => {
    const none = harness({ provider: "anthropic", script: [scriptedError(tooLong())] });
    const outcome = await none.run({ history: HISTORY });
    expect(completed(outcome)).toMatchObject(EXCEEDED);
    expect(texts(log(outcome))).toEqual(["Hello"]);
    const short = reactive({ script: [scriptedError(tooLong())] });
    expect(completed(await short.run({ history: HISTORY.slice(2) }))).toMatchObject(EXCEEDED);
    expect(short.small.calls).toBe(0);
  });

  it("rotates at most once: after a cold rotation a refusal is context_window_exceeded", async () => {
    const h = reactive({
      longContext: { ...POLICY, rotateAtTokens: 1, coldAfterMs: 0 },
      script: [scriptedError(tooLong())],
    });
    h.clock.advance(1);
    expect(completed(await h.run({ history: HISTORY }))).toMatchObject(EXCEEDED);
    expect(h.small.calls).toBe(1);
  });

  it("on a later step: the turn's own messages follow the tail, no tool runs again", async () => {
    let runs = 0;
    const counted = tool("echo", () => {
      runs += 1;
      return "echoed";
    });
    const h = reactive({
      tools: [counted],
      script: [
        scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
        scriptedError(tooLong()),
        scriptedText("Done."),
      ],
    });
    const result = completed(await h.run({ history: HISTORY }));
    expect(result.reply).toEqual([text("Done.")]);
    expect(runs).toBe(1);
    expect(texts(h.model.requests[2]?.messages ?? []).slice(1)).toEqual([
      "u2",
      "a2",
      "Hello",
      "tool_call",
      "tool_result",
    ]);
  });
});

describe("what never grants a rotation", () => {
  it("a generic provider error is uncertain", async () => {
    const server = reactive({
      script: [
        scriptedError(
          new ProviderError("anthropic HTTP 500", {
            kind: "server",
            provider: "anthropic",
            status: 500,
          }),
        ),
      ],
    });
    expect(uncertain(await server.run({ history: HISTORY })).cause).toBe("call:main:server:none");
    const thrown = reactive({ script: [scriptedError(new Error("prompt is too long"))] });
    expect(uncertain(await thrown.run({ history: HISTORY })).cause).toBe("call:main:error");
    expect(thrown.small.calls).toBe(0);
  });

  it("a context error from a provider without attested parity, or after output, is uncertain", async () => {
    const other = reactive({ provider: "openai", script: [scriptedError(tooLong("openai"))] });
    expect(uncertain(await other.run({ history: HISTORY })).cause).toBe(
      "call:main:context_window:none",
    );
    const usage = scriptedEvents([
      { type: "usage", evidence: { status: "known", usage: { inputTokens: 9, outputTokens: 0 } } },
    ]);
    const used = reactive({ script: [scriptedError(tooLong(), { at: 1, partial: usage })] });
    expect(uncertain(await used.run({ history: HISTORY })).cause).toBe(
      "call:main:context_window:none",
    );
    expect(used.small.calls).toBe(0);
  });

  it("a context refusal of a summary is uncertain", async () => {
    const h = reactive({
      policy: () => ({ clientId: "fake", model: "fake-main", maxOutputTokens: 64, cache: false }),
      script: [scriptedError(tooLong()), scriptedError(tooLong())],
    });
    expect(uncertain(await h.run({ history: HISTORY })).cause).toBe(
      "call:summary:rejected:context_window",
    );
  });
});
