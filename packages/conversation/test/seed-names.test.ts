// The names seed 002 (`../shared/seeds/002_9827b5a177358ad3.txt`) gives the conversation runner,
// each checked through the public export under the seed's spelling (issue 29).
import { describe, expect, it } from "vitest";
import {
  ConflictError,
  ConversationConflictError,
  type ConversationStores,
  type ConversationTool,
  type ConversationToolCtx,
  EventRefusedError,
  ExecutionConflictError,
  type ConversationView,
} from "@alma-harness/conversation";
import * as core from "@alma-harness/core";
import { defineTool, type ResultReservation } from "@alma-harness/core";
import { scriptedHang, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { humanMessage, SCOPE, setup } from "./harness.js";

const settle = () => new Promise((r) => setImmediate(r));

describe('seed 002: "It is an ExecutionConflictError; an outbox skips and alerts on it"', () => {
  it("a refused batch is an ExecutionConflictError, with its code, reason and eventId unchanged", async () => {
    const t = setup();
    await t.runner.recordEvents({
      scope: SCOPE,
      sessionId: "s1",
      events: [humanMessage("m1", "a")],
    });
    const error = await t.runner
      .recordEvents({ scope: SCOPE, sessionId: "s1", events: [humanMessage("m1", "b")] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionConflictError);
    expect(error).toBeInstanceOf(EventRefusedError);
    expect(error).toMatchObject({
      name: "EventRefusedError",
      code: "event_refused",
      retryable: false,
      eventId: "m1",
      reason: "conflict",
    });
  });

  it("a key reused for another request (ConversationConflictError) is one too, its code unchanged", async () => {
    const t = setup({ script: [scriptedText("hi")] });
    await t.runner.runTurn(t.request("k1"));
    const error = await t.runner.runTurn(t.request("k1", "Another question")).catch((e) => e);
    expect(error).toBeInstanceOf(ExecutionConflictError);
    expect(error).toBeInstanceOf(ConversationConflictError);
    expect(error).toMatchObject({ code: "conversation_conflict", retryable: false });
  });

  it("is core's ConflictError: a store's conflict is one too, so an outbox matches one class", async () => {
    expect(ExecutionConflictError).toBe(ConflictError);
    expect(core.ExecutionConflictError).toBe(core.ConflictError);
    const t = setup();
    const admit = (sessionId: string) =>
      t.stores.admissions.admit({
        scope: SCOPE,
        sessionId,
        rootKey: `root-${sessionId}`,
        kind: "turn",
        admissionId: "adm-twice",
        now: t.clock.now(),
        deadlineAt: t.clock.now() + 60_000,
      });
    await admit("s1");
    const error = await admit("s2").catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "admission_exists" });
    expect(error).toBeInstanceOf(ExecutionConflictError);
  });
});

describe('seed 002: "call:<kind>:aborted for a call its step runner aborted (usually stepTimeoutMs)"', () => {
  it("limits.stepTimeoutMs bounds each round, as roundTimeoutMs does, not a millisecond before", async () => {
    const t = setup({ script: [scriptedHang()], config: { limits: { stepTimeoutMs: 1_000 } } });
    let view: ConversationView | undefined;
    const pending = t.runner.runTurn(t.request("k1")).then((v) => {
      view = v;
      return v;
    });
    while (t.model.calls < 1) await settle();
    for (let i = 0; i < 5; i++) await settle();
    t.clock.advance(999);
    for (let i = 0; i < 20; i++) await settle();
    expect(view).toBeUndefined();
    t.clock.advance(1);
    expect((await pending).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:aborted"]);
  });

  it("is refused when it disagrees with roundTimeoutMs, accepted when equal", () => {
    expect(() =>
      setup({ config: { limits: { stepTimeoutMs: 1_000, roundTimeoutMs: 2_000 } } }),
    ).toThrow(/stepTimeoutMs is limits.roundTimeoutMs/);
    expect(() =>
      setup({ config: { limits: { stepTimeoutMs: 1_000, roundTimeoutMs: 1_000 } } }),
    ).not.toThrow();
  });

  it("a round that answers within it completes (the alias changes nothing else)", async () => {
    const t = setup({ script: [scriptedText("hi")], config: { limits: { stepTimeoutMs: 1_000 } } });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
  });
});

describe('seed 002: "Tools use ConversationTool and receive ConversationToolCtx, including models.direct({tier,sensitivity,prompt})"', () => {
  it("a ConversationTool's handler gets a ConversationToolCtx whose models.direct makes the child call", async () => {
    const seen: ConversationToolCtx[] = [];
    const ask: ConversationTool = defineTool({
      name: "ask",
      description: "Asks a smaller model.",
      input: { type: "object" },
      handler: async (_input, ctx: ConversationToolCtx) => {
        seen.push(ctx);
        const child = await ctx.models.direct({
          tier: "balanced",
          sensitivity: "internal",
          prompt: "Say the opening hours.",
        });
        return { child: child.text };
      },
    });
    const t = setup({
      tools: [ask],
      script: [
        scriptedToolCall({ id: "c1", name: "ask" }),
        scriptedText("nine to five"),
        scriptedText("done"),
      ],
    });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view.status).toBe("completed");
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ callId: "c1", toolName: "ask", sessionId: "s1" });
    expect(JSON.stringify(t.model.requests[2]?.messages)).toContain("nine to five");
  });
});

describe('seed 002: "set the root result policy\'s maxChars, at most 1,000,000 ... A final result over it ends the turn in reconciliation_required"', () => {
  const capturing = (reservations: ResultReservation[]) => (s: ConversationStores) => ({
    ...s,
    rootResults: new Proxy(s.rootResults, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== "function") return value;
        if (prop !== "reserve") return value.bind(target);
        return (r: ResultReservation) => {
          reservations.push(r);
          return value.call(target, r);
        };
      },
    }),
  });

  it("maxResultChars is the root result's maxChars: reserved under it, and a larger final result is uncertain", async () => {
    const reservations: ResultReservation[] = [];
    const t = setup({
      script: [scriptedText("x".repeat(400))],
      config: { maxResultChars: 300 },
      wrap: capturing(reservations),
    });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["result_store"]);
    expect(reservations.map((r) => r.maxChars)).toEqual([300]);
  });

  it("defaults to and is at most 1,000,000", async () => {
    const reservations: ResultReservation[] = [];
    const t = setup({ script: [scriptedText("hi")], wrap: capturing(reservations) });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
    expect(reservations.map((r) => r.maxChars)).toEqual([1_000_000]);
    expect(() => setup({ config: { maxResultChars: 1_000_001 } })).toThrow(/maxResultChars/);
  });
});
