import { type ConversationView, conversationRootKey } from "@alma-harness/conversation";
import { type Msg, ProviderError } from "@alma-harness/core";
import type { RecordingAuditLog } from "@alma-harness/core/testing";
import { type LongContextPolicy, measuredText } from "@alma-harness/loop";
import { scriptedError, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, type SetupOptions, setup } from "./harness.js";

const POLICY: LongContextPolicy = { rotateAtTokens: 10, keepLastMessages: 2, summaryTier: "fast" };
const texts = (messages: readonly Msg[]) =>
  messages.map((m) => m.blocks.map((b) => (b.type === "text" ? b.text : b.type)).join("|"));
const tooLong = () =>
  new ProviderError("anthropic HTTP 400: prompt is too long", {
    kind: "context_window",
    provider: "anthropic",
    status: 400,
  });

function result(view: ConversationView) {
  if (view.status !== "completed") throw new Error(`expected completed, got ${view.status}`);
  return view.result;
}

const withEvent = (t: ReturnType<typeof setup>, key: string, text: string, id: string) => ({
  ...t.request(key, text),
  input: {
    role: "user" as const,
    blocks: [{ type: "text" as const, text }],
    meta: { event: { id, kind: "input" as const } },
  },
});

/** Two turns on a fresh session (the second input carries the event id `wa-2`), then the clock moves by `idle`. */
async function twoTurns(opts: SetupOptions, idle: number) {
  const t = setup({ ...opts, config: { longContext: POLICY, ...opts.config } });
  result(await t.runner.runTurn(t.request("k1", "When are you open on Monday?")));
  result(await t.runner.runTurn(withEvent(t, "k2", "And on Tuesday?", "wa-2")));
  t.clock.advance(idle);
  return t;
}

describe("cold-start rotation through the runner", () => {
  it("a cold session over the size rotates: the summary on its tier, the tail kept, the store's view starts at the marker", async () => {
    const t = await twoTurns(
      {
        script: [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")],
        smallScript: [scriptedText("Asked Monday hours.")],
      },
      300_001,
    );
    const view = result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(view.receipts.map((r) => r.kind)).toEqual(["summary", "main"]);
    expect(texts(t.model.requests[2]?.messages ?? []).slice(1)).toEqual([
      "And on Tuesday?",
      "10 to 4.",
      "Can I book?",
    ]);
    expect(texts(t.small.requests[0]?.messages ?? [])).toEqual([
      "Person: When are you open on Monday?\nAssistant: 9 to 5.",
    ]);
    const session = await t.stores.sessions.load(SCOPE, "s1");
    expect([session.revision, session.offset]).toEqual([9, 4]);
    expect(session.messages[0]?.meta?.rotation).toEqual({ replaces: 2 });
    expect(texts(session.messages).slice(1)).toEqual([
      "And on Tuesday?",
      "10 to 4.",
      "Can I book?",
      "Yes.",
    ]);
    const routing = (t.stores.audit as RecordingAuditLog)
      .trail("routing")
      .filter((e) => e.kind === "summary");
    expect(routing[0]).toMatchObject({
      clientId: "small",
      tier: "fast",
      turnId: conversationRootKey(SCOPE, "s1", "k3"),
    });
  });

  it("the next turn's request starts at the summary", async () => {
    const t = await twoTurns(
      {
        script: [
          scriptedText("9 to 5."),
          scriptedText("10 to 4."),
          scriptedText("Yes."),
          scriptedText("Done."),
        ],
        smallScript: [scriptedText("Asked Monday hours.")],
      },
      300_001,
    );
    result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    result(await t.runner.runTurn(t.request("k4", "Thanks")));
    const request = t.model.requests[3]?.messages ?? [];
    expect(request[0]?.meta?.rotation).toEqual({ replaces: 2 });
    expect(texts(request).slice(1)).toEqual([
      "And on Tuesday?",
      "10 to 4.",
      "Can I book?",
      "Yes.",
      "Thanks",
    ]);
    expect(t.small.calls).toBe(1);
  });

  it("the tail keeps its event id once in the log: the copy carries none, so the append is not refused", async () => {
    const t = await twoTurns(
      {
        script: [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")],
        smallScript: [scriptedText("Asked Monday hours.")],
      },
      300_001,
    );
    result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(await t.stores.sessions.findEvents(SCOPE, "s1", ["wa-2"])).toHaveLength(1);
  });

  it("exactly coldAfterMs later the session is warm: the whole log is sent", async () => {
    const t = await twoTurns(
      { script: [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")] },
      300_000,
    );
    result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(t.small.calls).toBe(0);
    expect(t.model.requests[2]?.messages).toHaveLength(5);
  });

  it("rotates only strictly over rotateAtTokens, measured on the stored view", async () => {
    const script = () => [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")];
    const size = async (t: ReturnType<typeof setup>) =>
      measuredText((await t.stores.sessions.load(SCOPE, "s1")).messages).length;
    const estimateTokens = (text: string) => text.length;
    const probe = await twoTurns({ script: script() }, 300_001);
    const tokens = await size(probe);
    const at = await twoTurns(
      {
        script: script(),
        config: { longContext: { ...POLICY, rotateAtTokens: tokens, estimateTokens } },
      },
      300_001,
    );
    result(await at.runner.runTurn(at.request("k3", "Can I book?")));
    expect(at.small.calls).toBe(0);
    const over = await twoTurns(
      {
        script: script(),
        smallScript: [scriptedText("Asked.")],
        config: { longContext: { ...POLICY, rotateAtTokens: tokens - 1, estimateTokens } },
      },
      300_001,
    );
    result(await over.runner.runTurn(over.request("k3", "Can I book?")));
    expect(over.small.calls).toBe(1);
  });

  it("the kept tail starts at the person's message, never at a tool result", async () => {
    const t = setup({
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "monday" } }),
        scriptedText("9 to 5."),
        scriptedText("10 to 4."),
        scriptedText("Yes."),
      ],
      smallScript: [scriptedText("Asked Monday hours.")],
      config: { longContext: { ...POLICY, keepLastMessages: 4 } },
    });
    result(await t.runner.runTurn(t.request("k1")));
    result(await t.runner.runTurn(t.request("k2", "And on Tuesday?")));
    t.clock.advance(300_001);
    result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(texts(t.model.requests[3]?.messages ?? []).slice(1)).toEqual([
      "And on Tuesday?",
      "10 to 4.",
      "Can I book?",
    ]);
    expect(t.model.requests[3]?.messages[0]?.meta?.rotation).toEqual({ replaces: 4 });
  });

  it("with one call per turn the cold rule does not rotate: the whole log is sent", async () => {
    const t = await twoTurns(
      {
        script: [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")],
        config: { maxCalls: 1 },
      },
      300_001,
    );
    result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(t.small.calls).toBe(0);
    expect(t.model.requests[2]?.messages).toHaveLength(5);
  });

  it("a product-side message in the tail is re-recorded as stored and shown to the model as rendered", async () => {
    const t = setup({
      script: [scriptedText("9 to 5."), scriptedText("Yes.")],
      smallScript: [scriptedText("Asked Monday hours.")],
      config: { longContext: { ...POLICY, keepLastMessages: 1 } },
    });
    result(await t.runner.runTurn(t.request("k1")));
    await t.runner.recordEvents({
      scope: SCOPE,
      sessionId: "s1",
      events: [
        {
          id: "ev-1",
          at: "2026-01-01T00:00:00Z",
          kind: "message",
          role: "assistant",
          origin: "human",
          blocks: [{ type: "text", text: "Ana here." }],
        },
      ],
    });
    t.clock.advance(300_001);
    result(await t.runner.runTurn(t.request("k2", "Can I book?")));
    expect(t.model.requests[1]?.messages[1]).toMatchObject({
      role: "user",
      blocks: [{ type: "text", text: "[Message from the team, shown to the person] Ana here." }],
    });
    const session = await t.stores.sessions.load(SCOPE, "s1");
    expect(session.messages[1]).toEqual({
      role: "assistant",
      blocks: [{ type: "text", text: "Ana here.", origin: "human" }],
    });
  });
});

describe("reactive rotation through the runner", () => {
  const warm = (script: SetupOptions["script"], config = {}) =>
    twoTurns(
      {
        provider: "anthropic",
        script: [scriptedText("9 to 5."), scriptedText("10 to 4."), ...(script ?? [])],
        smallScript: [scriptedText("Asked Monday hours.")],
        config,
      },
      0,
    );

  it("one rotation and retry: completed, and the session's view starts at the marker", async () => {
    const t = await warm([scriptedError(tooLong()), scriptedText("Yes.")]);
    const view = result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(view.reply).toEqual([{ type: "text", text: "Yes." }]);
    expect(view.receipts.map((r) => [r.kind, r.usdMicros > 0])).toEqual([
      ["main", false],
      ["summary", true],
      ["main", true],
    ]);
    const session = await t.stores.sessions.load(SCOPE, "s1");
    expect(texts(session.messages).slice(1)).toEqual([
      "And on Tuesday?",
      "10 to 4.",
      "Can I book?",
      "Yes.",
    ]);
  });

  it("a second refusal: completed with context_window_exceeded and an empty reply, replayed under the key", async () => {
    const t = await warm([scriptedError(tooLong()), scriptedError(tooLong())]);
    const view = await t.runner.runTurn(t.request("k3", "Can I book?"));
    expect(result(view)).toMatchObject({ stopReason: "context_window_exceeded", reply: [] });
    expect(await t.runner.runTurn(t.request("k3", "Can I book?"))).toEqual({
      ...view,
      replayed: true,
    });
    expect(t.uncertain).toEqual([]);
  });

  it("fewer than two calls left: context_window_exceeded without a summary", async () => {
    const t = await warm([scriptedError(tooLong())], { maxCalls: 2 });
    expect(result(await t.runner.runTurn(t.request("k3", "Can I book?")))).toMatchObject({
      stopReason: "context_window_exceeded",
      reply: [],
    });
    expect(t.small.calls).toBe(0);
  });

  it("a generic provider error stays uncertain", async () => {
    const t = await warm([
      scriptedError(
        new ProviderError("anthropic HTTP 500", {
          kind: "server",
          provider: "anthropic",
          status: 500,
        }),
      ),
    ]);
    expect((await t.runner.runTurn(t.request("k3", "Can I book?"))).status).toBe(
      "reconciliation_required",
    );
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:server:none"]);
    expect(t.small.calls).toBe(0);
  });
});
