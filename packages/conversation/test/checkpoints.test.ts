import type { ParkedTurnStore } from "@alma-harness/core";
import { defineTool, type ToolContext } from "@alma-harness/core";
import { scriptedHang, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, type SetupOptions, setup } from "./harness.js";

/** A read that may hang (a process dying inside it), counting its runs and their effect keys. */
function lookup(opts: { replaySafe: boolean; hang: () => boolean }) {
  const runs: string[] = [];
  const tool = defineTool({
    name: "lookup",
    description: "Looks up opening hours.",
    input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
    ...(opts.replaySafe ? { replaySafe: true } : {}),
    handler: (input, ctx: ToolContext) => {
      runs.push(ctx.effectKey);
      if (opts.hang()) return new Promise(() => undefined);
      return { day: input.day as string, open: "09:00-17:00" };
    },
  });
  return { tool, runs };
}

const CALL = { id: "c1", name: "lookup", input: { day: "monday" } };

/**
 * Process A runs a turn and "dies" (a hang that never settles); process B shares its stores with
 * its own clock, so only B sees time pass: at B's tick past A's deadline, B goes on from A's last
 * step boundary.
 */
function twoProcesses(
  tool: ReturnType<typeof lookup>["tool"],
  scriptA: NonNullable<SetupOptions["script"]>,
  scriptB: NonNullable<SetupOptions["script"]>,
) {
  const config = { asks: "park" as const };
  const a = setup({ tools: [tool], script: scriptA, config });
  // Its own ids too: two processes never mint the same admission id.
  let n = 0;
  const ids = {
    next: (prefix: string) => {
      n += 1;
      return `${prefix}_b${n}`;
    },
  };
  const b = setup({
    tools: [tool],
    script: scriptB,
    config: { ...config, ids },
    wrap: () => a.stores,
  });
  return { a, b };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!done()) throw new Error("timed out");
}

/** Process A died inside a replay-safe tool's first run (it hangs once); B shares its stores. */
async function diedInSafeTool() {
  let hang = true;
  const l = lookup({ replaySafe: true, hang: () => hang });
  const { a, b } = twoProcesses(
    l.tool,
    [scriptedToolCall(CALL, { text: "Let me check." })],
    [scriptedText("Open 9 to 5.")],
  );
  void a.runner.runTurn(a.request("k1"));
  await until(() => l.runs.length === 1);
  hang = false;
  return { a, b, l };
}

describe("a turn that dies mid-way goes on from its last step boundary (issue 25)", () => {
  it("inside a replay-safe tool: the tool runs again with the same effect key; no model call is sent twice", async () => {
    const { a, b, l } = await diedInSafeTool();
    expect(await b.runner.resumeDue()).toEqual([]);
    b.clock.advance(120_000);
    const [view] = await b.runner.resumeDue();
    expect(view?.status).toBe("completed");
    expect(l.runs).toHaveLength(2);
    expect(l.runs[1]).toBe(l.runs[0]);
    expect([a.model.calls, b.model.calls]).toEqual([1, 1]);
    const read = await b.runner.read(SCOPE, (view as { rootKey: string }).rootKey);
    expect(read?.status === "completed" && read.result.reply).toEqual([
      { type: "text", text: "Open 9 to 5." },
    ]);
    // The session is free and the turn's record is gone.
    expect((await b.runner.runTurn(b.request("k2", "thanks"))).status).not.toBe("busy");
    expect(await a.stores.parked.due({ now: b.clock.now() })).toEqual([]);
  });

  it("inside a tool that is not replay-safe: reconciliation_required, and it never runs again", async () => {
    const l = lookup({ replaySafe: false, hang: () => true });
    const { a, b } = twoProcesses(
      l.tool,
      [scriptedToolCall(CALL, { text: "Let me check." })],
      [scriptedText("never")],
    );
    void a.runner.runTurn(a.request("k1"));
    await until(() => l.runs.length === 1);
    b.clock.advance(120_000);
    const [view] = await b.runner.resumeDue();
    expect(view?.status).toBe("reconciliation_required");
    expect(l.runs).toHaveLength(1);
    expect(b.model.calls).toBe(0);
    expect(b.uncertain.map((u) => u.cause)).toEqual(["tool:lookup"]);
  });

  it("during a model call after a tool: the call is never sent again, the turn ends reconciliation_required", async () => {
    const l = lookup({ replaySafe: false, hang: () => false });
    const { a, b } = twoProcesses(
      l.tool,
      [scriptedToolCall(CALL, { text: "Let me check." }), scriptedHang()],
      [scriptedText("never")],
    );
    void a.runner.runTurn(a.request("k1"));
    await until(() => a.model.calls === 2);
    b.clock.advance(120_000);
    const [view] = await b.runner.resumeDue();
    expect(view?.status).toBe("reconciliation_required");
    expect(b.model.calls).toBe(0);
    expect(l.runs).toHaveLength(1);
  });

  it("a plain answer writes no checkpoint; a tool turn writes one per resumable boundary and removes it at the end", async () => {
    const l = lookup({ replaySafe: false, hang: () => false });
    const counts = { checkpoint: 0, done: 0 };
    const written: Parameters<ParkedTurnStore["checkpoint"]>[0][] = [];
    const t = setup({
      tools: [l.tool],
      script: [
        scriptedText("Hello."),
        scriptedToolCall(CALL, { text: "Let me check." }),
        scriptedText("Open 9 to 5."),
      ],
      config: { asks: "park" },
      wrap: (s) => {
        const parked = s.parked as ParkedTurnStore;
        const counted: ParkedTurnStore = {
          ...parked,
          park: (i) => parked.park(i),
          get: (...x) => parked.get(...x),
          decide: (i) => parked.decide(i),
          claim: (i) => parked.claim(i),
          due: (i) => parked.due(i),
          list: (i) => parked.list(i),
          find: (i) => parked.find(i),
          checkpoint: (i) => {
            counts.checkpoint += 1;
            written.push(i);
            return parked.checkpoint(i);
          },
          done: (...x) => {
            counts.done += 1;
            return parked.done(...x);
          },
        };
        return { ...s, parked: counted };
      },
    });
    expect((await t.runner.runTurn(t.request("k1", "hi"))).status).toBe("completed");
    expect(counts).toEqual({ checkpoint: 0, done: 0 });
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("completed");
    // After the model's tool call (the step's tools), after the tools (the next model call).
    expect(counts).toEqual({ checkpoint: 2, done: 1 });
    expect(await t.stores.parked.list({ org: SCOPE.org })).toEqual([]);
    // Each boundary stores only its new messages; the record refers to every one by digest.
    expect(written.map((w) => w.outputs?.length ?? 0)).toEqual([2, 1]);
    const second = written[1]?.continuation as { loop: { messages: { ref: string }[] } };
    expect(second.loop.messages.map((m) => m.ref)).toEqual(["output", "output", "output"]);
  });

  it("a stored output that no longer matches its digest: the resume ends uncertain and nothing runs", async () => {
    const { a, b, l } = await diedInSafeTool();
    // The store hands back an altered message under its digest (a corrupted or edited row).
    const parked = a.stores.parked as ParkedTurnStore;
    const claim = parked.claim.bind(parked);
    parked.claim = async (input) => {
      const r = await claim(input);
      if (r.status !== "claimed") return r;
      const outputs = r.turn.outputs.map((o) => ({
        ...o,
        message: { role: "user", blocks: [{ type: "text", text: "book everything" }] },
      }));
      return { ...r, turn: { ...r.turn, outputs } };
    };
    b.clock.advance(120_000);
    const [view] = await b.runner.resumeDue();
    expect(view?.status).toBe("reconciliation_required");
    expect(b.uncertain.map((u) => u.cause)).toEqual(["continuation"]);
    expect(l.runs).toHaveLength(1);
    expect(b.model.calls).toBe(0);
  });

  it("a scope fenced while a tool runs ends the turn scope_fenced at its next checkpoint; nothing more is sent", async () => {
    let fence: (() => Promise<unknown>) | undefined;
    const tool = defineTool({
      name: "lookup",
      description: "Looks up opening hours.",
      input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
      handler: async () => {
        await fence?.();
        return { open: "09:00-17:00" };
      },
    });
    const t = setup({
      tools: [tool],
      script: [scriptedToolCall(CALL, { text: "Let me check." }), scriptedText("never")],
      config: { asks: "park" },
    });
    fence = () => t.runner.fenceScope({ target: { org: SCOPE.org }, reason: "operator" });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view.status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["scope_fenced"]);
    expect(t.model.calls).toBe(1);
  });
});
