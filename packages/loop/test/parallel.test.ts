import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  type Deferred,
  deferred,
  flush,
  harness,
  tool,
  uncertain,
  until,
  log,
} from "./harness.js";

/** Tools whose handlers wait on deferreds the test resolves in any order. */
function gated(names: readonly string[]) {
  const gates = new Map<string, Deferred<string>>(names.map((n) => [n, deferred<string>()]));
  const started: string[] = [];
  const signals = new Map<string, AbortSignal>();
  const tools = names.map((name) =>
    tool(name, (_input, ctx) => {
      started.push(name);
      signals.set(name, ctx.signal);
      return gates.get(name)!.promise;
    }),
  );
  return { gates, started, signals, tools };
}

const threeCalls = scriptedToolCall([
  { id: "c1", name: "a" },
  { id: "c2", name: "b" },
  { id: "c3", name: "c" },
]);

describe("parallel dispatch", () => {
  it("runs calls sequentially by default", async () => {
    const g = gated(["a", "b", "c"]);
    const h = harness({ tools: g.tools, script: [threeCalls, scriptedText("ok")] });
    const turn = h.run();
    await until(() => g.started.length === 1, "a started");
    expect(g.started).toEqual(["a"]);
    g.gates.get("a")!.resolve("A");
    await until(() => g.started.length === 2, "b started");
    g.gates.get("b")!.resolve("B");
    await until(() => g.started.length === 3, "c started");
    g.gates.get("c")!.resolve("C");
    completed(await turn);
  });

  it("runs a batch concurrently and lands results in the model's order when handlers finish out of order", async () => {
    const g = gated(["a", "b", "c"]);
    const h = harness({
      tools: g.tools,
      limits: { maxParallelToolCalls: 3 },
      script: [threeCalls, scriptedText("ok")],
    });
    const turn = h.run();
    await until(() => g.started.length === 3, "all started");
    g.gates.get("c")!.resolve("C");
    g.gates.get("a")!.resolve("A");
    g.gates.get("b")!.resolve("B");
    const outcome = await turn;
    completed(outcome);
    expect(log(outcome)[2]?.blocks.map((b) => (b as { callId: string }).callId)).toEqual([
      "c1",
      "c2",
      "c3",
    ]);
    expect(log(outcome)[2]?.blocks.map((b) => (b as { output: unknown }).output)).toEqual([
      "A",
      "B",
      "C",
    ]);
    // every call precedes every result: the calls are in the assistant message, the results after it
    expect(log(outcome)[1]?.blocks.every((b) => b.type === "tool_call")).toBe(true);
    // every intent is durable before any call is admitted
    const life = h
      .trail("lifecycle")
      .filter((e) => e.action === "tool.call" || e.action === "tool.result");
    expect(life.slice(0, 3).map((e) => e.action)).toEqual(["tool.call", "tool.call", "tool.call"]);
    expect(life.slice(3).map((e) => e.callId)).toEqual(["c3", "c1", "c2"]);
  });

  it("batches by maxParallelToolCalls: the next batch starts when the whole batch settled", async () => {
    const g = gated(["a", "b", "c"]);
    const h = harness({
      tools: g.tools,
      limits: { maxParallelToolCalls: 2 },
      script: [threeCalls, scriptedText("ok")],
    });
    const turn = h.run();
    await until(() => g.started.length === 2, "first batch");
    g.gates.get("b")!.resolve("B");
    await until(() => h.eventsOf("tool.result").length === 1, "b settled");
    expect(g.started).toEqual(["a", "b"]);
    g.gates.get("a")!.resolve("A");
    await until(() => g.started.length === 3, "second batch");
    g.gates.get("c")!.resolve("C");
    const outcome = await turn;
    expect(log(outcome)[2]?.blocks.map((b) => (b as { output: unknown }).output)).toEqual([
      "A",
      "B",
      "C",
    ]);
  });

  it("a sibling that throws aborts the batch: the others see their signal, the turn is uncertain, nothing runs after", async () => {
    const g = gated(["a", "c"]);
    const boom = tool("b", () => Promise.reject(new Error("boom")));
    const h = harness({
      tools: [g.tools[0]!, boom, g.tools[1]!],
      limits: { maxParallelToolCalls: 3 },
      script: [threeCalls, scriptedText("never")],
    });
    const turn = h.run();
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("tool:b");
    expect(g.signals.get("a")?.aborted).toBe(true);
    expect(g.signals.get("c")?.aborted).toBe(true);
    const events = h.events.length;
    g.gates.get("a")!.resolve("late");
    await flush(50);
    expect(h.events.length).toBe(events);
    expect(h.eventsOf("turn.completed")).toHaveLength(1);
    expect(log(outcome)[2]?.blocks.map((b) => (b as { code?: string }).code)).toEqual([
      "TOOL_INTERRUPTED",
      "TOOL_INTERRUPTED",
      "TOOL_INTERRUPTED",
    ]);
    expect(h.model.calls).toBe(1);
  });
});
