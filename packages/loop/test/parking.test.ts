import { defineTool, type ToolContext, ValidationError } from "@alma-harness/core";
import {
  type AskDecision,
  askDigest,
  type Continuation,
  ContinuationError,
  EngineConfigError,
  type PermissionController,
  type TurnOutcome,
} from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, type HarnessOptions } from "./harness.js";

/** The booking tool: its policy asks; it counts its runs and keeps each run's effect key. */
function booking() {
  const runs: { slot: string; effectKey: string }[] = [];
  const tool = defineTool({
    name: "book",
    description: "Books a slot.",
    input: { type: "object", properties: { slot: { type: "string" } }, required: ["slot"] },
    authorize: (input) => ({ action: "write", subject: `slot:${String(input.slot)}` }),
    handler: (input, ctx: ToolContext) => {
      runs.push({ slot: String(input.slot), effectKey: ctx.effectKey });
      return { booked: input.slot };
    },
  });
  return { tool, runs };
}

/** Books ask; everything else is allowed. No resolver: only a park (or the kernel) answers. */
const bookingAsks: PermissionController = { decide: (r) => (r.tool === "book" ? "ask" : "allow") };

/** A turn on one engine that parks, and a second engine (another process) that resumes it. */
function twoProcesses(first: HarnessOptions["script"], second: HarnessOptions["script"]) {
  const b = booking();
  const common = { tools: [b.tool, echoTool], permissions: bookingAsks, asks: "park" as const };
  const one = harness({ ...common, script: first ?? [] });
  const two = harness({ ...common, script: second ?? [], settlements: one.settlements });
  return { one, two, runs: b.runs };
}

function parked(outcome: TurnOutcome) {
  if (outcome.status !== "awaiting_approval")
    throw new Error(`expected a park, got ${outcome.status}`);
  // What a store keeps: plain JSON, read back.
  return {
    ...outcome,
    continuation: JSON.parse(JSON.stringify(outcome.continuation)) as Continuation,
  };
}

const bookCall = (id = "c1", slot = "mon-9") => ({ id, name: "book", input: { slot } });
const ALLOW: AskDecision = { allowed: true, by: "operator" };

describe("a permission ask parks the turn (asks: park)", () => {
  it("parks with the pending ask bound to a digest, holding nothing; another engine resumes it and the call runs once", async () => {
    const p = twoProcesses(
      [scriptedToolCall(bookCall(), { text: "Booking." })],
      [scriptedText("Booked.")],
    );
    const first = parked(await p.one.run());
    expect(first.asks).toHaveLength(1);
    const [ask] = first.asks;
    expect(ask).toMatchObject({ callId: "c1", tool: "book", action: "write" });
    expect(ask?.digest).toBe(askDigest("book", "c1", { slot: "mon-9" }));
    expect(p.runs).toHaveLength(0);
    expect(p.one.model.calls).toBe(1);
    expect(p.one.trail("policy").map((e) => e.action)).toEqual([
      "intent",
      "decision",
      "permission.requested",
    ]);
    expect(p.one.trail("lifecycle").at(-1)?.action).toBe("turn.parked");
    expect(p.one.eventsOf("turn.parked")).toEqual([
      {
        type: "turn.parked",
        turnId: "turn-1",
        asks: [{ askId: ask?.askId, callId: "c1", name: "book" }],
      },
    ]);

    const input = p.one.input({ rootKey: "root-1", turnId: "turn-1" });
    const done = completed(
      await p.two.engine.resumeTurn(input, first.continuation, { [ask?.askId as string]: ALLOW }),
    );
    expect(done.reply).toEqual([{ type: "text", text: "Booked." }]);
    expect(p.runs.map((r) => r.slot)).toEqual(["mon-9"]);
    // One model call before the park, one after: no settled call is sent again.
    expect(p.one.model.calls + p.two.model.calls).toBe(2);
    expect(done.receipts).toHaveLength(2);
    expect(done.costMicros).toBe(done.receipts.reduce((sum, r) => sum + r.usdMicros, 0));
    expect(done.toolCalls).toEqual([
      { id: "c1", name: "book", input: { slot: "mon-9" }, isError: false },
    ]);
    expect(p.two.trail("policy").map((e) => [e.action, e.decision, e.by])).toEqual([
      ["permission.resolved", "allow", "operator"],
    ]);
    expect(p.two.trail("lifecycle")[0]?.action).toBe("turn.resumed");
    expect(p.two.eventsOf("turn.resumed")).toEqual([
      { type: "turn.resumed", turnId: "turn-1", sessionId: "s1" },
    ]);
    // Seed 004: each run between its bookends, the parked one and the one that goes on.
    const types = (events: readonly { type: string }[]) => events.map((e) => e.type);
    expect([types(p.one.events).at(0), ...types(p.one.events).slice(-2)]).toEqual([
      "agent.started",
      "turn.parked",
      "agent.stopped",
    ]);
    expect(p.one.events.at(-1)).toEqual({
      type: "agent.stopped",
      turnId: "turn-1",
      status: "awaiting_approval",
    });
    expect([...types(p.two.events).slice(0, 2), ...types(p.two.events).slice(-2)]).toEqual([
      "agent.started",
      "turn.resumed",
      "turn.completed",
      "agent.stopped",
    ]);
  });

  it("a denial is the call's error observation, attributed to whoever decided; an expiry is the kernel's", async () => {
    for (const [decision, text] of [
      [{ allowed: false, by: "operator" }, "permission denied: denied by the operator"],
      [
        { allowed: false, by: "kernel", reason: "ask_expired" },
        "permission denied: the request for permission expired before anyone decided",
      ],
    ] as const) {
      const p = twoProcesses(
        [scriptedToolCall(bookCall())],
        [scriptedText("It could not be booked.")],
      );
      const first = parked(await p.one.run());
      const askId = first.asks[0]?.askId as string;
      const input = p.one.input({ rootKey: "root-1", turnId: "turn-1" });
      const outcome = await p.two.engine.resumeTurn(input, first.continuation, {
        [askId]: decision,
      });
      const result = completed(outcome);
      expect(result.toolCalls[0]?.isError).toBe(true);
      expect(p.runs).toHaveLength(0);
      const resultBlock =
        outcome.status === "completed" ? outcome.messages.at(-2)?.blocks[0] : undefined;
      expect(resultBlock).toMatchObject({ type: "tool_result", callId: "c1", output: text });
      const resolved = p.two.trail("policy").find((e) => e.action === "permission.resolved");
      expect([resolved?.by, resolved?.reason ?? null]).toEqual([
        decision.by,
        "reason" in decision ? decision.reason : null,
      ]);
    }
  });

  it("a sibling that ran before the park is not run again; the calls after it run once, in order", async () => {
    let echoes = 0;
    const counted = defineTool({
      name: "echo",
      description: "Echoes.",
      input: { type: "object" },
      handler: (input) => {
        echoes += 1;
        return input;
      },
    });
    const b = booking();
    const common = { tools: [b.tool, counted], permissions: bookingAsks, asks: "park" as const };
    const calls = [
      { id: "c1", name: "echo", input: { n: 1 } },
      bookCall("c2"),
      { id: "c3", name: "echo", input: { n: 3 } },
    ];
    const one = harness({ ...common, script: [scriptedToolCall(calls)] });
    const two = harness({
      ...common,
      script: [scriptedText("Done.")],
      settlements: one.settlements,
    });
    const first = parked(await one.run());
    expect(echoes).toBe(1);
    const next = first.continuation.next;
    expect(next.kind === "run_tools" ? next.calls.map((c) => c.state) : []).toEqual([
      "done",
      "asked",
      "requested",
    ]);
    const askId = first.asks[0]?.askId as string;
    const input = one.input({ rootKey: "root-1", turnId: "turn-1" });
    const outcome = await two.engine.resumeTurn(input, first.continuation, { [askId]: ALLOW });
    const result = completed(outcome);
    expect(echoes).toBe(2);
    expect(b.runs).toHaveLength(1);
    expect(result.toolCalls.map((c) => [c.id, c.isError])).toEqual([
      ["c1", false],
      ["c2", false],
      ["c3", false],
    ]);
    const results = outcome.status === "completed" ? outcome.messages.at(-2)?.blocks : [];
    expect(results?.map((r) => (r.type === "tool_result" ? r.callId : r.type))).toEqual([
      "c1",
      "c2",
      "c3",
    ]);
  });

  it("without a decision it parks again on the same ask, and the effect key is the same in every run", async () => {
    const p = twoProcesses([scriptedToolCall(bookCall())], [scriptedText("Booked.")]);
    const first = parked(await p.one.run());
    const input = () => p.one.input({ rootKey: "root-1", turnId: "turn-1" });
    const again = parked(await p.two.engine.resumeTurn(input(), first.continuation, {}));
    expect(again.asks).toEqual(first.asks);
    expect(p.two.model.calls).toBe(0);
    const askId = first.asks[0]?.askId as string;
    completed(await p.two.engine.resumeTurn(input(), again.continuation, { [askId]: ALLOW }));
    const other = twoProcesses([scriptedToolCall(bookCall())], [scriptedText("Booked.")]);
    const o = parked(await other.one.run());
    await other.two.engine.resumeTurn(input(), o.continuation, {
      [o.asks[0]?.askId as string]: ALLOW,
    });
    expect(p.runs[0]?.effectKey).toMatch(/^eff_[0-9a-f]{40}$/);
    expect(other.runs[0]?.effectKey).toBe(p.runs[0]?.effectKey);
  });

  it("refuses a decision it cannot apply, a continuation of another turn, or a tampered one, and runs nothing", async () => {
    const p = twoProcesses([scriptedToolCall(bookCall())], [scriptedText("Booked.")]);
    const first = parked(await p.one.run());
    const askId = first.asks[0]?.askId as string;
    const input = (o = {}) => p.one.input({ rootKey: "root-1", turnId: "turn-1", ...o });
    const refuse = async (run: () => Promise<TurnOutcome>, type: new (...args: never[]) => Error) =>
      expect(run()).rejects.toBeInstanceOf(type);
    await refuse(
      () => p.two.engine.resumeTurn(input(), first.continuation, { ask_other: ALLOW }),
      ValidationError,
    );
    for (const bad of [
      { allowed: false, by: "kernel" },
      { allowed: false, by: "operator", reason: "ask_expired" },
      { allowed: true, by: "operator", reason: "operator_denied" },
      { allowed: "yes", by: "operator" },
      { allowed: true, by: "operator", extra: 1 },
    ]) {
      await refuse(
        () => p.two.engine.resumeTurn(input(), first.continuation, { [askId]: bad as AskDecision }),
        ValidationError,
      );
    }
    await refuse(
      () =>
        p.two.engine.resumeTurn(input({ rootKey: "root-9" }), first.continuation, {
          [askId]: ALLOW,
        }),
      ValidationError,
    );
    await refuse(
      () => p.two.engine.resumeTurn(input({ revision: 3 }), first.continuation, { [askId]: ALLOW }),
      ValidationError,
    );
    // What bounds the turn comes from the park, never from the resume's request.
    for (const other of [
      { intent: { tier: "balanced", sensitivity: "restricted" } },
      { intent: { tier: "deep", sensitivity: "internal" } },
      { grant: ["echo"] },
    ] as const) {
      await refuse(
        () => p.two.engine.resumeTurn(input(other), first.continuation, { [askId]: ALLOW }),
        ValidationError,
      );
    }
    // A decision is data: a getter is refused without running.
    let ran = false;
    const getter = {
      get [askId]() {
        ran = true;
        return ALLOW;
      },
    };
    await refuse(
      () => p.two.engine.resumeTurn(input(), first.continuation, getter),
      ValidationError,
    );
    expect(ran).toBe(false);
    await refuse(
      () =>
        p.two.engine.resumeTurn(
          input(),
          { ...first.continuation, extra: true },
          { [askId]: ALLOW },
        ),
      ContinuationError,
    );
    expect(p.runs).toHaveLength(0);
    expect(p.two.model.calls).toBe(0);
  });

  it("two asks of one parallel batch: a decision for one runs it, the other waits; a later call never runs ahead of an earlier ask", async () => {
    const b = booking();
    const common = {
      tools: [b.tool],
      permissions: bookingAsks,
      asks: "park" as const,
      limits: { maxParallelToolCalls: 2 },
    };
    const one = harness({
      ...common,
      script: [scriptedToolCall([bookCall("c1", "a"), bookCall("c2", "b")])],
    });
    const two = harness({
      ...common,
      script: [scriptedText("Both booked.")],
      settlements: one.settlements,
    });
    const first = parked(await one.run());
    const [a, bAsk] = first.asks.map((x) => x.askId);
    const input = () => one.input({ rootKey: "root-1", turnId: "turn-1" });
    const states = (c: Continuation) =>
      c.next.kind === "run_tools" ? c.next.calls.map((x) => x.state) : [];
    // Only the second decided: it may not run ahead of the first ask; both still wait.
    const onlySecond = parked(
      await two.engine.resumeTurn(input(), first.continuation, { [bAsk as string]: ALLOW }),
    );
    expect(states(onlySecond.continuation)).toEqual(["asked", "asked"]);
    expect(b.runs).toHaveLength(0);
    // Only the first decided: it runs; the second waits.
    const onlyFirst = parked(
      await two.engine.resumeTurn(input(), onlySecond.continuation, { [a as string]: ALLOW }),
    );
    expect(states(onlyFirst.continuation)).toEqual(["done", "asked"]);
    expect(b.runs.map((r) => r.slot)).toEqual(["a"]);
    const done = completed(
      await two.engine.resumeTurn(input(), onlyFirst.continuation, { [bAsk as string]: ALLOW }),
    );
    expect(b.runs.map((r) => r.slot)).toEqual(["a", "b"]);
    expect(done.toolCalls.map((c) => [c.id, c.isError])).toEqual([
      ["c1", false],
      ["c2", false],
    ]);
    expect(one.model.calls + two.model.calls).toBe(2);
  });

  it("asks takes wait or park only", () => {
    expect(() => harness({ asks: "later" as never })).toThrow(EngineConfigError);
  });
});
