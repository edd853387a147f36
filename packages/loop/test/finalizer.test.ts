import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, echoTool, harness, uncertain, log } from "./harness.js";

const toolTurn = () => [
  scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } }),
  scriptedText("ok"),
];

describe("one finalizer", () => {
  it("a sink that throws on every event cannot break the turn; exactly one turn.completed", async () => {
    const seen: string[] = [];
    const h = harness({
      tools: [echoTool],
      sink: (e) => {
        seen.push(e.type);
        throw new Error("sink bug");
      },
      script: toolTurn(),
    });
    const result = completed(await h.run());
    expect(result.reply).toEqual([{ type: "text", text: "ok" }]);
    expect(seen.filter((t) => t === "turn.completed")).toHaveLength(1);
    expect(seen.slice(-2)).toEqual(["turn.completed", "agent.stopped"]);
  });

  it("a slow sink is never waited for, and a rejecting one is swallowed", async () => {
    let calls = 0;
    const h = harness({ tools: [echoTool], script: toolTurn() });
    const turn = h.engine.runTurn(
      h.input({
        sink: (e) => {
          calls += 1;
          return e.type === "turn.started"
            ? new Promise(() => undefined)
            : Promise.reject(new Error("late"));
        },
      }),
    );
    completed(await turn);
    expect(calls).toBeGreaterThan(5);
  });

  it("a failing completed record leaves through the uncertain exit: one turn.completed, turn:end hears the truth last", async () => {
    const ends: string[] = [];
    const h = harness({
      auditFail: (e) =>
        e.trail === "lifecycle" && e.action === "turn.completed"
          ? new Error("disk full")
          : undefined,
      hooks: { "turn:end": (i) => void ends.push(i.outcome) },
      script: [scriptedText("ok")],
    });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("audit");
    expect(outcome.receipts).toHaveLength(1);
    expect(ends).toEqual(["completed", "reconciliation_required"]);
    expect(h.eventsOf("turn.completed")).toEqual([
      {
        type: "turn.completed",
        turnId: "turn-1",
        outcome: "reconciliation_required",
        cause: "audit",
      },
    ]);
    expect(h.trail("lifecycle").map((e) => e.action)).toEqual([
      "turn.started",
      "model.request",
      "turn.uncertain",
    ]);
  });

  it("an audit log that fails everything still yields exactly one outcome", async () => {
    const h = harness({ auditFail: new Error("audit offline"), script: [scriptedText("never")] });
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("audit");
    expect(h.model.calls).toBe(0);
    expect(h.eventsOf("turn.completed")).toHaveLength(1);
    // Seed 004: the run's bookends frame it whatever its outcome, agent.stopped naming it.
    expect(h.events[0]).toEqual({ type: "agent.started", turnId: "turn-1", sessionId: "s1" });
    expect(h.events.slice(-2)).toEqual([
      expect.objectContaining({ type: "turn.completed", outcome: "reconciliation_required" }),
      { type: "agent.stopped", turnId: "turn-1", status: "reconciliation_required" },
    ]);
  });

  it("every ending leaves through the same exit: completed outcomes record turn.completed with their reason", async () => {
    const h = harness({
      tools: [echoTool],
      limits: { maxCalls: 1 },
      script: [scriptedToolCall({ id: "c1", name: "echo", input: { text: "x" } })],
    });
    const result = completed(await h.run());
    expect(result.terminalReason).toBe("call_limit");
    expect(h.trail("lifecycle").at(-1)).toMatchObject({
      action: "turn.completed",
      detail: "call_limit",
      messageRevision: 3,
    });
    expect(h.eventsOf("turn.completed")).toEqual([
      {
        type: "turn.completed",
        turnId: "turn-1",
        outcome: "completed",
        terminalReason: "call_limit",
      },
    ]);
  });

  it("a step cut at max_tokens completes with an empty reply, keeps its receipt and persists nothing of the step", async () => {
    const h = harness({ script: [scriptedText("trunc", { stopReason: "max_tokens" })] });
    const outcome = await h.run();
    const result = completed(outcome);
    expect(result).toMatchObject({
      reply: [],
      stopReason: "max_tokens",
      terminalReason: "max_tokens",
    });
    expect(result.receipts).toHaveLength(1);
    expect(log(outcome).map((m) => m.role)).toEqual(["user"]);
    expect(h.eventsOf("step.text")).toEqual([]);
  });
});
