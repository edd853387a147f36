import { CANCELLED_BEFORE_EXECUTION } from "@alma-harness/loop";
import { scriptedHang, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { deferred, flush, harness, tool, uncertain, until, log } from "./harness.js";

const three = scriptedToolCall([
  { id: "c1", name: "a" },
  { id: "c2", name: "b" },
  { id: "c3", name: "c" },
]);

describe("cancellation", () => {
  it("before the turn: nothing runs, the outcome is uncertain (cancelled), one turn.completed", async () => {
    const h = harness({ script: [scriptedText("never")] });
    const control = new AbortController();
    control.abort();
    const outcome = uncertain(await h.run({ signal: control.signal }));
    expect(outcome.cause).toBe("cancelled");
    expect(outcome.failure.kind).toBe("cancelled");
    expect(h.model.calls).toBe(0);
    expect(log(outcome)).toEqual([]);
    expect(h.trail("lifecycle").map((e) => e.action)).toEqual(["turn.uncertain"]);
    expect(h.eventsOf("turn.completed")).toEqual([
      {
        type: "turn.completed",
        turnId: "turn-1",
        outcome: "reconciliation_required",
        cause: "cancelled",
      },
    ]);
  });

  it("mid-stream: the stream is abandoned and closed, no effect of the round is kept", async () => {
    const h = harness({ script: [scriptedHang(scriptedText("partial"), 1)] });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => h.model.calls === 1, "the stream opened");
    await flush();
    control.abort(new Error("the person left"));
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("cancelled");
    expect(log(outcome).map((m) => m.role)).toEqual(["user"]);
    expect(h.model.closed).toBe(1);
    expect(h.eventsOf("step.text")).toEqual([]);
    const record = await h.journal.get(h.input().scope, "turn-1:main:1");
    expect(record).toMatchObject({ state: "received", evidence: { status: "unknown" } });
  });

  it("mid-dispatch: real results first, then a synthesized one per unfinished call, in model order", async () => {
    const gate = { a: deferred<string>(), c: deferred<string>() };
    const started: string[] = [];
    const start = <T>(name: string, value: T) => {
      started.push(name);
      return value;
    };
    const tools = [
      tool("a", () => start("a", gate.a.promise)),
      tool("b", () => start("b", "B")),
      tool("c", () => start("c", gate.c.promise)),
    ];
    const h = harness({
      tools,
      limits: { maxParallelToolCalls: 3 },
      script: [three, scriptedText("never")],
    });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => h.eventsOf("tool.result").length === 1, "b finished");
    control.abort();
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("cancelled");
    expect(log(outcome).at(-1)?.blocks).toEqual([
      { type: "tool_result", callId: "c2", name: "b", output: "B", isError: false },
      {
        type: "tool_result",
        callId: "c1",
        name: "a",
        output: CANCELLED_BEFORE_EXECUTION,
        isError: true,
        code: "TOOL_CANCELLED",
      },
      {
        type: "tool_result",
        callId: "c3",
        name: "c",
        output: CANCELLED_BEFORE_EXECUTION,
        isError: true,
        code: "TOOL_CANCELLED",
      },
    ]);
    // the sink receives the paired events, before the one turn.completed
    expect(h.eventsOf("tool.result").map((e) => [e.callId, e.code ?? "ok"])).toEqual([
      ["c2", "ok"],
      ["c1", "TOOL_CANCELLED"],
      ["c3", "TOOL_CANCELLED"],
    ]);
    // The run's bookend closes it (seed 004), after its one turn.completed.
    expect(h.events.slice(-2).map((e) => e.type)).toEqual(["turn.completed", "agent.stopped"]);
    expect(h.eventsOf("turn.completed")).toHaveLength(1);
    expect(h.model.calls).toBe(1);
  });

  it("mid-dispatch, sequential: the calls not yet started never start", async () => {
    const gate = deferred<string>();
    const started: string[] = [];
    const start = <T>(name: string, value: T) => {
      started.push(name);
      return value;
    };
    const tools = [
      tool("a", () => start("a", "A")),
      tool("b", () => start("b", gate.promise)),
      tool("c", () => start("c", "C")),
    ];
    const h = harness({ tools, script: [three] });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => started.length === 2, "b started");
    control.abort();
    const outcome = uncertain(await turn);
    expect(started).toEqual(["a", "b"]);
    expect(
      log(outcome)
        .at(-1)
        ?.blocks.map((b) => [
          (b as { callId: string }).callId,
          b.type === "tool_result" && b.isError,
        ]),
    ).toEqual([
      ["c1", false],
      ["c2", true],
      ["c3", true],
    ]);
  });

  it("a handler that ignores the signal cannot block the finalizer", async () => {
    let started = false;
    const stubborn = tool("stubborn", () => {
      started = true;
      return new Promise(() => undefined);
    });
    const h = harness({
      tools: [stubborn],
      script: [scriptedToolCall({ id: "c1", name: "stubborn" })],
    });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => started, "handler started");
    control.abort();
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("cancelled");
    expect(h.clock.pending).toBe(0);
  });

  it("cancellation while waiting for a permission resolver denies and ends the turn", async () => {
    let asked = false;
    let ran = false;
    const t = tool("t", () => {
      ran = true;
      return 1;
    });
    const h = harness({
      tools: [t],
      permissions: {
        decide: () => "ask",
        resolve: (_r, signal) => {
          asked = true;
          return new Promise<boolean>((resolve) =>
            signal.addEventListener("abort", () => resolve(true)),
          );
        },
      },
      script: [scriptedToolCall({ id: "c1", name: "t" })],
    });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => asked, "resolver asked");
    control.abort();
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("cancelled");
    expect(ran).toBe(false);
  });

  it("cancellation reaches a delegate mid-stream", async () => {
    const research = tool(
      "research",
      async (_i, ctx) =>
        (await ctx.models.delegate({ tier: "fast", sensitivity: "internal", prompt: "dig" })).text,
    );
    const h = harness({
      tools: [research],
      script: [scriptedToolCall({ id: "c1", name: "research" })],
      smallScript: [scriptedHang()],
    });
    const control = new AbortController();
    const turn = h.run({ signal: control.signal });
    await until(() => h.small.calls === 1, "child streaming");
    control.abort();
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("cancelled");
    expect(h.small.closed).toBe(1);
  });
});

describe("the per-round deadline", () => {
  it("aborts the round when roundTimeoutMs passes on the engine's clock, not a millisecond before", async () => {
    const h = harness({ limits: { roundTimeoutMs: 1_000 }, script: [scriptedHang()] });
    let settled = false;
    const turn = h.run().then((o) => {
      settled = true;
      return o;
    });
    await until(() => h.model.calls === 1 && h.clock.pending === 1, "round timer armed");
    h.clock.advance(999);
    await flush(50);
    expect(settled).toBe(false);
    h.clock.advance(1);
    const outcome = uncertain(await turn);
    expect(outcome.cause).toBe("call:main:aborted");
    expect(outcome.failure.kind).toBe("timeout");
    expect(h.model.closed).toBe(1);
  });

  it("defaults to 60 seconds and is disarmed once the round ends", async () => {
    const h = harness({ script: [scriptedHang()] });
    const turn = h.run();
    await until(() => h.clock.pending === 1, "round timer armed");
    h.clock.advance(60_000);
    expect(uncertain(await turn).cause).toBe("call:main:aborted");
    const ok = harness({ script: [scriptedText("hi")] });
    await ok.run();
    expect(ok.clock.pending).toBe(0);
  });
});

describe("a call that ran keeps its real result", () => {
  it("when the cancel arrives while tool:post runs", async () => {
    const control = new AbortController();
    const t = tool("t", () => "done");
    const h = harness({
      tools: [t],
      hooks: {
        "tool:post": () => {
          control.abort();
          return new Promise<void>(() => undefined);
        },
      },
      script: [scriptedToolCall({ id: "c1", name: "t" })],
    });
    const outcome = uncertain(await h.run({ signal: control.signal }));
    expect(outcome.cause).toBe("cancelled");
    expect(log(outcome).at(-1)?.blocks).toEqual([
      { type: "tool_result", callId: "c1", name: "t", output: "done", isError: false },
    ]);
  });
});
