import type { DelegateRequest, ModelGateways, ToolContext } from "@alma-harness/core";
import { DelegationRefusedError } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall, scriptedTorn } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import {
  completed,
  echoTool,
  flush,
  harness,
  type HarnessOptions,
  tool,
  uncertain,
  log,
} from "./harness.js";

const REQ: DelegateRequest = { tier: "fast", sensitivity: "internal", prompt: "dig" };

/** One main tool whose handler runs `body` with its context; the model calls it once, then answers. */
function withHandler(body: (ctx: ToolContext) => unknown, opts: HarnessOptions = {}) {
  const outcomes: unknown[] = [];
  const probe = tool("probe", async (_i, ctx) => {
    try {
      const value = await body(ctx);
      outcomes.push(value);
      return value;
    } catch (error) {
      outcomes.push(error);
      throw error;
    }
  });
  const h = harness({
    script: [scriptedToolCall({ id: "m1", name: "probe" }), scriptedText("ok")],
    ...opts,
    tools: [probe, echoTool, ...(opts.tools ?? [])],
  });
  return { h, outcomes };
}

describe("models.direct", () => {
  it("runs one tool-free child call on its own route, charged to the root", async () => {
    const { h, outcomes } = withHandler(
      (ctx) => ctx.models.direct({ tier: "fast", sensitivity: "public", prompt: "summarize" }),
      { smallScript: [scriptedText("summary")] },
    );
    const result = completed(await h.run());
    expect(outcomes[0]).toEqual({ text: "summary", usage: { inputTokens: 10, outputTokens: 5 } });
    expect(h.small.requests[0]?.tools).toEqual([]);
    expect(h.small.requests[0]?.messages).toEqual([
      { role: "user", blocks: [{ type: "text", text: "summarize" }] },
    ]);
    expect(result.receipts.map((r) => r.kind)).toEqual(["main", "direct", "main"]);
    expect(result.costMicros).toBe(105 + 35 + 105);
    expect(result.usage).toEqual({ inputTokens: 30, outputTokens: 15 });
  });

  it("rejects a supplied toolChoice before anything runs", async () => {
    const { h, outcomes } = withHandler(async (ctx) => {
      try {
        await ctx.models.direct({
          tier: "fast",
          sensitivity: "public",
          prompt: "x",
          toolChoice: { type: "auto" },
        } as never);
      } catch (error) {
        return (error as { rule?: string }).rule;
      }
    });
    completed(await h.run());
    expect(outcomes).toEqual(["unsupported"]);
    expect(h.small.calls).toBe(0);
  });

  it("refuses a higher sensitivity by throwing; a handler that handles it keeps the turn completed", async () => {
    const { h, outcomes } = withHandler(async (ctx) => {
      try {
        await ctx.models.direct({ tier: "fast", sensitivity: "confidential", prompt: "x" });
      } catch (error) {
        return error instanceof DelegationRefusedError ? error.reason : "other";
      }
    });
    completed(await h.run());
    expect(outcomes).toEqual(["sensitivity"]);
    expect(h.routes).toHaveLength(1);
  });
});

describe("delegate and tryDelegate: structural refusals precede child policy, hooks and money", () => {
  const refusedBy = async (req: DelegateRequest, opts: HarnessOptions = {}) => {
    const { h, outcomes } = withHandler((ctx) => ctx.models.tryDelegate(req), opts);
    const outcome = await h.run({ grant: ["probe", "echo"] });
    completed(outcome);
    expect(h.routes).toHaveLength(1);
    expect(h.small.calls).toBe(0);
    expect(h.trail("routing").filter((e) => e.servedTier === undefined)).toHaveLength(2);
    return { outcome, value: outcomes[0] };
  };

  it("a higher sensitivity is refused: sensitivity", async () => {
    expect((await refusedBy({ ...REQ, sensitivity: "restricted" })).value).toEqual({
      status: "refused",
      reason: "sensitivity",
    });
  });

  it("a tool outside the parent's grant is refused: tool_grant", async () => {
    const extra = tool("admin", () => 1);
    expect((await refusedBy({ ...REQ, tools: ["admin"] }, { tools: [extra] })).value).toEqual({
      status: "refused",
      reason: "tool_grant",
    });
  });

  it("search_tools is refused: tool_grant", async () => {
    expect((await refusedBy({ ...REQ, tools: ["search_tools"] })).value).toEqual({
      status: "refused",
      reason: "tool_grant",
    });
  });

  it("the refusal is frozen, and delegate throws it instead", async () => {
    const { value } = await refusedBy({ ...REQ, sensitivity: "restricted" });
    expect(Object.isFrozen(value)).toBe(true);
    const { h, outcomes } = withHandler(async (ctx) => {
      try {
        await ctx.models.delegate({ ...REQ, sensitivity: "restricted" });
      } catch (error) {
        return error instanceof DelegationRefusedError ? error.reason : "other";
      }
    });
    completed(await h.run());
    expect(outcomes).toEqual(["sensitivity"]);
  });

  it("returning the exact refusal object emits a bounded error result; a clone is ordinary output", async () => {
    const exact = withHandler((ctx) =>
      ctx.models.tryDelegate({ ...REQ, sensitivity: "restricted" }),
    );
    const exactOutcome = await exact.h.run();
    expect(log(exactOutcome)[2]?.blocks[0]).toEqual({
      type: "tool_result",
      callId: "m1",
      name: "probe",
      output: "delegation refused: sensitivity",
      isError: true,
    });
    const clone = withHandler(async (ctx) => ({
      ...(await ctx.models.tryDelegate({ ...REQ, sensitivity: "restricted" })),
    }));
    const cloneOutcome = await clone.h.run();
    expect(log(cloneOutcome)[2]?.blocks[0]).toEqual({
      type: "tool_result",
      callId: "m1",
      name: "probe",
      output: { status: "refused", reason: "sensitivity" },
      isError: false,
    });
  });

  it("nesting beyond maxDelegateDepth is refused: depth", async () => {
    const seen: unknown[] = [];
    const inner = tool("inner", async (_i, ctx) => {
      const attempt = await ctx.models.tryDelegate(REQ);
      seen.push([ctx.depth, attempt]);
      return "inner done";
    });
    const { h } = withHandler(
      async (ctx) => (await ctx.models.delegate({ ...REQ, tools: ["inner"] })).text,
      {
        tools: [inner],
        limits: { maxDelegateDepth: 1 },
        smallScript: [scriptedToolCall({ id: "d1", name: "inner" }), scriptedText("child done")],
      },
    );
    completed(await h.run());
    expect(seen).toEqual([[1, { status: "refused", reason: "depth" }]]);
  });

  it("a nested delegate cannot exceed its parent delegate's sensitivity or grant, even within the root's", async () => {
    const seen: unknown[] = [];
    const inner = tool("inner", async (_i, ctx) => {
      seen.push(await ctx.models.tryDelegate({ ...REQ, sensitivity: "internal" }));
      seen.push(await ctx.models.tryDelegate({ ...REQ, sensitivity: "public", tools: ["echo"] }));
      return "inner done";
    });
    const { h } = withHandler(
      async (ctx) =>
        (await ctx.models.delegate({ ...REQ, sensitivity: "public", tools: ["inner"] })).text,
      {
        tools: [inner],
        smallScript: [scriptedToolCall({ id: "d1", name: "inner" }), scriptedText("child done")],
      },
    );
    completed(await h.run());
    expect(seen).toEqual([
      { status: "refused", reason: "sensitivity" },
      { status: "refused", reason: "tool_grant" },
    ]);
  });

  it("malformed child requests are rejected before routing", async () => {
    const sparse = ["echo"];
    sparse.length = 2;
    const getter = { ...REQ } as Record<string, unknown>;
    Object.defineProperty(getter, "prompt", { enumerable: true, get: () => "x" });
    const bad: unknown[] = [
      { ...REQ, extra: 1 },
      { ...REQ, tier: "huge" },
      { ...REQ, sensitivity: "secret" },
      { ...REQ, prompt: "" },
      { ...REQ, prompt: "x".repeat(1_000_001) },
      { ...REQ, tools: Array.from({ length: 257 }, () => "echo") },
      { ...REQ, tools: ["x".repeat(201)] },
      { ...REQ, tools: sparse },
      getter,
    ];
    const { h, outcomes } = withHandler(async (ctx) => {
      const codes: string[] = [];
      for (const req of bad) {
        try {
          await ctx.models.tryDelegate(req as DelegateRequest);
          codes.push("accepted");
        } catch (error) {
          codes.push((error as { code: string }).code);
        }
      }
      return codes;
    });
    completed(await h.run());
    expect(outcomes[0]).toEqual(bad.map(() => "invalid_input"));
    expect(h.routes).toHaveLength(1);
  });

  it("a prompt of exactly 1,000,000 units and 256 names are accepted", async () => {
    const { h, outcomes } = withHandler(
      async (ctx) =>
        (
          await ctx.models.tryDelegate({
            ...REQ,
            prompt: "x".repeat(1_000_000),
            tools: Array.from({ length: 256 }, () => "echo"),
          })
        ).status,
      {
        smallScript: [scriptedText("ok")],
      },
    );
    completed(await h.run());
    expect(outcomes).toEqual(["completed"]);
  });
});

describe("delegates: narrowed grant, shared limits, honest failures", () => {
  it("a delegate is advertised only the tools it asked for, from the parent's grant", async () => {
    const { h } = withHandler(
      async (ctx) => (await ctx.models.delegate({ ...REQ, tools: ["echo"] })).text,
      { smallScript: [scriptedText("child")] },
    );
    completed(await h.run());
    expect(h.small.requests[0]?.tools.map((t) => t.name)).toEqual(["echo"]);
  });

  it("children share the root's call limit: the main loop then ends unanswered", async () => {
    const { h } = withHandler(async (ctx) => (await ctx.models.delegate(REQ)).text, {
      limits: { maxCalls: 2 },
      smallScript: [scriptedText("child")],
    });
    const result = completed(await h.run());
    expect(result.callLimit).toEqual({ maxCalls: 2, answered: false });
    expect(h.model.calls).toBe(1);
    expect(result.receipts.map((r) => r.kind)).toEqual(["main", "delegate"]);
  });

  it("a delegate's tool with no call left to read it never runs", async () => {
    let ran = 0;
    const inner = tool("inner", () => ++ran);
    const { h } = withHandler(
      async (ctx) => (await ctx.models.delegate({ ...REQ, tools: ["inner"] })).text,
      {
        tools: [inner],
        limits: { maxCalls: 2 },
        smallScript: [scriptedToolCall({ id: "d1", name: "inner" })],
      },
    );
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:delegate:call_limit");
    expect(ran).toBe(0);
  });

  it("exceeding a delegate's own step ceiling is uncertain, and the last step's tools never run", async () => {
    let ran = 0;
    const inner = tool("inner", () => ++ran);
    const { h } = withHandler(
      async (ctx) => (await ctx.models.delegate({ ...REQ, tools: ["inner"], maxSteps: 2 })).text,
      {
        tools: [inner],
        smallScript: [
          scriptedToolCall({ id: "d1", name: "inner" }),
          scriptedToolCall({ id: "d2", name: "inner" }),
        ],
      },
    );
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:delegate:step_limit");
    expect(ran).toBe(1);
  });

  it("a child started and not awaited makes the turn uncertain, and is aborted", async () => {
    const { h } = withHandler(
      (ctx) => {
        void ctx.models.delegate(REQ).catch(() => undefined);
        return "returned early";
      },
      { smallScript: [scriptedText("child")] },
    );
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("children_pending");
    expect(h.model.calls).toBe(1);
    await flush(100);
    expect(h.small.calls).toBe(0);
    // The run's bookend closes it (seed 004), after its one turn.completed.
    expect(h.events.slice(-2).map((e) => e.type)).toEqual(["turn.completed", "agent.stopped"]);
    const open = await h.journal.list(h.input().scope);
    expect(open.items.map((r) => r.state)).toEqual([]);
  });

  it("a child failure swallowed by the handler still makes the turn uncertain", async () => {
    const { h } = withHandler(
      async (ctx) => {
        try {
          await ctx.models.delegate(REQ);
        } catch {
          return "never mind";
        }
      },
      { smallScript: [scriptedTorn(scriptedText("partial"))] },
    );
    const outcome = uncertain(await h.run());
    expect(outcome.cause).toBe("call:delegate:torn:none");
  });

  it("a returned toolError never clears a child failure", async () => {
    const { toolError } = await import("@alma-harness/core");
    const { h } = withHandler(
      async (ctx) => {
        try {
          await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "x" });
        } catch {
          return toolError("child failed");
        }
      },
      { smallScript: [scriptedTorn(scriptedText("partial"))] },
    );
    expect(uncertain(await h.run()).cause).toBe("call:direct:torn:none");
  });

  it("the gateways are revoked when the handler settles", async () => {
    let kept: ModelGateways | undefined;
    const { h } = withHandler(
      (ctx) => {
        kept = ctx.models;
        return "ok";
      },
      { smallScript: [scriptedText("never")] },
    );
    completed(await h.run());
    await expect(kept!.delegate(REQ)).rejects.toMatchObject({ code: "uncertain_turn" });
    await expect(kept!.tryDelegate(REQ)).rejects.toMatchObject({ code: "uncertain_turn" });
    await expect(
      kept!.direct({ tier: "fast", sensitivity: "public", prompt: "x" }),
    ).rejects.toMatchObject({ code: "uncertain_turn" });
    expect(h.small.calls).toBe(0);
  });

  it("concurrent children never share an operation id", async () => {
    const twice = tool("twice", async (_i, ctx) => {
      const [a, b] = await Promise.all([
        ctx.models.direct({ tier: "fast", sensitivity: "public", prompt: "a" }),
        ctx.models.direct({ tier: "fast", sensitivity: "public", prompt: "b" }),
      ]);
      return a.text + b.text;
    });
    const h = harness({
      tools: [twice],
      script: [scriptedToolCall({ id: "m1", name: "twice" }), scriptedText("ok")],
      smallScript: [scriptedText("A"), scriptedText("B")],
    });
    const result = completed(await h.run());
    const ids = result.receipts.map((r) => r.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(result.receipts).toHaveLength(4);
  });
});
