import {
  AskRefusedError,
  ConversationConfigError,
  type ConversationView,
  createConversationRunner,
} from "@alma-harness/conversation";
import { defineTool, type ToolContext } from "@alma-harness/core";
import type { PermissionController } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, setup } from "./harness.js";

/** The booking tool: its policy asks; it counts its runs and keeps each run's effect key. */
function booking(opts: { replaySafe?: boolean; hang?: () => boolean } = {}) {
  const runs: { slot: string; effectKey: string }[] = [];
  const tool = defineTool({
    name: "book",
    description: "Books a slot.",
    input: { type: "object", properties: { slot: { type: "string" } }, required: ["slot"] },
    // One slot per approval: an approved ask grants its run that slot, not every booking.
    authorize: (input) => ({ action: "write", subject: `slot:${String(input.slot)}` }),
    ...(opts.replaySafe ? { replaySafe: true } : {}),
    handler: (input, ctx: ToolContext) => {
      runs.push({ slot: String(input.slot), effectKey: ctx.effectKey });
      // A handler that never returns stands for a process that died inside it.
      if (opts.hang?.()) return new Promise(() => undefined);
      return { booked: input.slot };
    },
  });
  return { tool, runs };
}

const bookingAsks: PermissionController = { decide: (r) => (r.tool === "book" ? "ask" : "allow") };
const bookCall = (id = "c1", slot = "mon-9") => ({ id, name: "book", input: { slot } });
const TTL = 10 * 60_000;

/** A runner that parks its asks, on the harness's memory stores. */
function parking(script: Parameters<typeof setup>[0] extends infer O ? O : never = {}) {
  const b = booking();
  const t = setup({
    tools: [b.tool],
    ...script,
    config: { permissions: bookingAsks, asks: "park", approvalTtlMs: TTL, ...script?.config },
  });
  return { ...t, runs: b.runs };
}

async function waitFor(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 5));
  if (!done()) throw new Error("timed out waiting");
}

function awaiting(view: ConversationView) {
  if (view.status !== "awaiting_approval") throw new Error(`expected a park, got ${view.status}`);
  return view;
}

describe("a conversation turn parks on a permission ask (asks: park)", () => {
  it("answers awaiting_approval, holds the session, and runs the call once after the decision", async () => {
    const t = parking({
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Booked at nine.")],
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1", "Book me Monday at nine")));
    expect(view.asks).toEqual([
      expect.objectContaining({ callId: "c1", tool: "book", expiresAt: t.clock.now() + TTL }),
    ]);
    expect(t.runs).toHaveLength(0);
    // The session stays held: another key is busy; the same key reads the park.
    expect((await t.runner.runTurn(t.request("k2", "hello"))).status).toBe("busy");
    expect((await t.runner.read(SCOPE, view.rootKey))?.status).toBe("awaiting_approval");
    expect((await t.runner.runTurn(t.request("k1", "Book me Monday at nine"))).status).toBe(
      "awaiting_approval",
    );
    const [ask] = view.asks;
    // An operator's listing, from the store: the call's arguments, digest and expiry.
    expect(await t.runner.parkedAsks({ org: SCOPE.org })).toEqual([
      expect.objectContaining({
        askId: ask?.askId,
        rootKey: view.rootKey,
        sessionId: "s1",
        input: { slot: "mon-9" },
        expiresAt: view.expiresAt,
      }),
    ]);
    expect((await t.runner.findAsk(ask?.askId as string))?.scope).toEqual(SCOPE);
    const resolved = await t.runner.resolveAsk({
      scope: SCOPE,
      askId: ask?.askId as string,
      decision: "approve",
      by: "nurse-ana",
    });
    expect(resolved.view.status).toBe("completed");
    expect(t.runs).toHaveLength(1);
    expect(t.model.calls).toBe(2);
    const read = await t.runner.read(SCOPE, view.rootKey);
    expect(read?.status === "completed" && read.result.toolCalls.map((c) => c.isError)).toEqual([
      false,
    ]);
    // The session is free again, and the parked record is gone.
    expect(await t.runner.parkedAsks({ org: SCOPE.org })).toEqual([]);
    expect((await t.runner.runTurn(t.request("k3", "thanks"))).status).not.toBe("busy");
  });

  it("a denial is the operator's; the model reads it and the turn completes without the call", async () => {
    const t = parking({
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Not booked.")],
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const r = await t.runner.resolveAsk({
      scope: SCOPE,
      askId: view.asks[0]?.askId as string,
      decision: "deny",
      by: "nurse-ana",
    });
    expect(r.view.status).toBe("completed");
    expect(t.runs).toHaveLength(0);
    const policy = t.stores.audit.events.filter(
      (e) => e.trail === "policy" && e.action === "permission.resolved",
    ) as unknown as { by?: string; reason?: string }[];
    expect(policy.map((e) => [e.by, e.reason])).toEqual([["operator", "operator_denied"]]);
  });

  it("an expired ask is denied by the kernel at the maintenance tick, and the session is freed", async () => {
    const t = parking({
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Not booked.")],
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    t.clock.advance(TTL - 1);
    expect(await t.runner.resumeDue()).toEqual([]);
    t.clock.advance(1);
    await expect(
      t.runner.resolveAsk({
        scope: SCOPE,
        askId: view.asks[0]?.askId as string,
        decision: "approve",
        by: "nurse-ana",
      }),
    ).rejects.toMatchObject({ reason: "expired" });
    const [done] = await t.runner.resumeDue();
    expect(done?.status).toBe("completed");
    expect(t.runs).toHaveLength(0);
    const resolved = t.stores.audit.events.filter(
      (e) => e.trail === "policy" && e.action === "permission.resolved",
    ) as unknown as { by?: string; reason?: string }[];
    expect(resolved.map((e) => [e.by, e.reason])).toEqual([["kernel", "ask_expired"]]);
    expect((await t.runner.runTurn(t.request("k2", "hello"))).status).not.toBe("busy");
  });

  it("refuses a decision for another digest, a forged, replayed or expired token, and an unknown ask; nothing runs", async () => {
    const t = parking({
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Booked.")],
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const askId = view.asks[0]?.askId as string;
    const base = { scope: SCOPE, askId, decision: "approve" as const, by: "nurse-ana" };
    const reason = async (p: Promise<unknown>) =>
      p.then(
        () => "resolved",
        (e: Error) => (e instanceof AskRefusedError ? e.reason : String(e)),
      );
    expect(await reason(t.runner.resolveAsk({ ...base, digest: "0".repeat(64) }))).toBe(
      "digest_mismatch",
    );
    const token = (await t.runner.askToken(SCOPE, askId)) as string;
    expect(token).toMatch(/^at1\./);
    const [p, payload, mac] = token.split(".");
    const flipped = `${p}.${payload}.${mac?.slice(0, -1)}${mac?.endsWith("0") ? "1" : "0"}`;
    expect(await reason(t.runner.resolveAsk({ ...base, token: flipped }))).toBe("token_forged");
    expect(await reason(t.runner.resolveAsk({ ...base, token: "at1.e30.abc" }))).toBe(
      "token_forged",
    );
    // Another tenant's scope: the MAC is bound to the scope.
    const other = { org: "clinic-b", uid: "u1" };
    expect(await reason(t.runner.resolveAsk({ ...base, scope: other, token }))).toBe(
      "token_forged",
    );
    expect(await reason(t.runner.resolveAsk({ ...base, askId: `ask_${"f".repeat(32)}` }))).toBe(
      "unknown_ask",
    );
    expect(t.runs).toHaveLength(0);
    const r = await t.runner.resolveAsk({ ...base, token });
    expect(r.view.status).toBe("completed");
    expect(await reason(t.runner.resolveAsk({ ...base, token }))).toMatch(
      /token_replayed|unknown_ask/,
    );
    expect(t.runs).toHaveLength(1);
  });

  it("a token past its expiry is refused", async () => {
    const t = parking({ script: [scriptedToolCall(bookCall(), { text: "Booking." })] });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const askId = view.asks[0]?.askId as string;
    const token = (await t.runner.askToken(SCOPE, askId)) as string;
    t.clock.advance(TTL);
    await expect(
      t.runner.resolveAsk({ scope: SCOPE, askId, decision: "approve", by: "x", token }),
    ).rejects.toMatchObject({ reason: "token_expired" });
    expect(t.runs).toHaveLength(0);
  });

  it("two runners resuming the same decided turn produce one resume and one handler run", async () => {
    const t = parking({
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Booked.")],
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const askId = view.asks[0]?.askId as string;
    // Record the decision straight in the store, as another process would, then race two resumes.
    const ask = (await t.stores.parked.find(askId))[0]?.asks[0];
    await t.stores.parked.decide({
      scope: SCOPE,
      askId,
      digest: ask?.digest as string,
      decision: { allowed: true, by: "operator" },
      now: t.clock.now(),
    });
    const [a, b] = await Promise.all([t.runner.resumeDue(), t.runner.runTurn(t.request("k1"))]);
    expect(t.runs).toHaveLength(1);
    expect(t.model.calls).toBe(2);
    expect([...a.map((v) => v.status), b.status]).toContain("completed");
  });

  it("a resumed run that died inside a non-replay-safe handler ends reconciliation_required with one run", async () => {
    const b = booking({ hang: () => true });
    const t = setup({
      tools: [b.tool],
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Booked.")],
      config: { permissions: bookingAsks, asks: "park", approvalTtlMs: TTL },
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const askId = view.asks[0]?.askId as string;
    void t.runner.resolveAsk({ scope: SCOPE, askId, decision: "approve", by: "x" });
    await waitFor(() => b.runs.length === 1);
    // The run holds its admission until its deadline: nothing is due before it.
    expect(await t.runner.resumeDue()).toEqual([]);
    t.clock.advance(120_000);
    const [after] = await t.runner.resumeDue();
    expect(after?.status).toBe("reconciliation_required");
    expect(b.runs).toHaveLength(1);
    expect(t.uncertain.map((u) => u.cause)).toContain("tool:book");
    expect((await t.runner.read(SCOPE, view.rootKey))?.status).toBe("reconciliation_required");
  });

  it("a replay-safe tool whose resumed run died runs again with the same effect key", async () => {
    let first = true;
    const b = booking({ replaySafe: true, hang: () => first });
    const t = setup({
      tools: [b.tool],
      script: [scriptedToolCall(bookCall(), { text: "Booking." }), scriptedText("Booked.")],
      config: { permissions: bookingAsks, asks: "park", approvalTtlMs: TTL },
    });
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    const askId = view.asks[0]?.askId as string;
    void t.runner.resolveAsk({ scope: SCOPE, askId, decision: "approve", by: "x" });
    await waitFor(() => b.runs.length === 1);
    first = false;
    t.clock.advance(120_000);
    const [after] = await t.runner.resumeDue();
    expect(after?.status).toBe("completed");
    expect(b.runs).toHaveLength(2);
    expect(b.runs[1]?.effectKey).toBe(b.runs[0]?.effectKey);
  });

  it("decideAsk records and says when the turn is ready; resume goes on with it inside aroundResume", async () => {
    const b = booking();
    const wrapped: string[] = [];
    const t = setup({
      tools: [b.tool],
      script: [
        scriptedToolCall([bookCall("c1", "mon-9"), bookCall("c2", "tue-9")], { text: "Booking." }),
        scriptedText("Booked both."),
      ],
      config: {
        permissions: bookingAsks,
        asks: "park",
        aroundResume: async (turn, run) => {
          wrapped.push(turn.rootKey);
          return run();
        },
      },
    });
    // Calls run in order: the turn parks on the first ask, the second call not yet asked.
    const view = awaiting(await t.runner.runTurn(t.request("k1")));
    expect(view.asks.map((a) => a.callId)).toEqual(["c1"]);
    const decide = (askId: string) =>
      t.runner.decideAsk({ scope: SCOPE, askId, decision: "approve", by: "nurse-ana" });
    // Not decided yet: a resume reads the park and claims nothing.
    expect((await t.runner.resume(SCOPE, view.rootKey)).status).toBe("awaiting_approval");
    expect(wrapped).toEqual([]);
    expect((await decide(view.asks[0]?.askId as string)).ready).toBe(true);
    // The resumed run books c1, then parks again on c2's ask, under its own admission.
    const again = awaiting(await t.runner.resume(SCOPE, view.rootKey));
    expect(again.asks.map((a) => a.callId)).toEqual(["c2"]);
    expect(b.runs.map((r) => r.slot)).toEqual(["mon-9"]);
    expect((await t.runner.runTurn(t.request("k2", "hello"))).status).toBe("busy");
    expect((await decide(again.asks[0]?.askId as string)).ready).toBe(true);
    expect((await t.runner.resume(SCOPE, view.rootKey)).status).toBe("completed");
    expect(wrapped).toEqual([view.rootKey, view.rootKey]);
    expect(t.model.calls).toBe(2);
    expect(b.runs.map((r) => r.slot)).toEqual(["mon-9", "tue-9"]);
  });

  it('asks: "park" needs a parked-turn store; approvalTtlMs is bounded', () => {
    const t = setup();
    const { parked: _p, ...withoutParked } = t.stores;
    const base = { stores: withoutParked, asks: "park" as const };
    expect(() => setup({ config: base })).toThrow(ConversationConfigError);
    expect(() => setup({ config: { asks: "park", approvalTtlMs: 999 } })).toThrow(
      ConversationConfigError,
    );
    expect(() =>
      setup({ config: { asks: "park", approvalTtlMs: 7 * 24 * 3_600_000 + 1 } }),
    ).toThrow(ConversationConfigError);
    expect(() =>
      setup({ config: { asks: "park", approvalTtlMs: 7 * 24 * 3_600_000 } }),
    ).not.toThrow();
    expect(createConversationRunner).toBeTypeOf("function");
  });
});
