import type { ConversationView } from "@alma-harness/conversation";
import type { LongContextPolicy } from "@alma-harness/loop";
import { scriptedHang, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { type SetupOptions, setup } from "./harness.js";

const POLICY: LongContextPolicy = { rotateAtTokens: 10, keepLastMessages: 2, summaryTier: "fast" };

function result(view: ConversationView) {
  if (view.status !== "completed") throw new Error(`expected completed, got ${view.status}`);
  return view.result;
}

/** Two turns on a fresh session, then the session goes cold: the third turn summarizes first. */
async function cold(opts: SetupOptions) {
  const t = setup({ ...opts, config: { longContext: POLICY, ...opts.config } });
  result(await t.runner.runTurn(t.request("k1", "When are you open on Monday?")));
  result(await t.runner.runTurn(t.request("k2", "And on Tuesday?")));
  t.clock.advance(300_001);
  return t;
}

describe("a summary's attempts (spec: call-retry)", () => {
  it("an empty summary is tried again; the turn rotates on the second and lists the failure", async () => {
    const t = await cold({
      script: [scriptedText("9 to 5."), scriptedText("10 to 4."), scriptedText("Yes.")],
      smallScript: [scriptedText(""), scriptedText("Asked Monday hours.")],
      config: { longContext: POLICY, callAttempts: 2 },
    });
    const view = result(await t.runner.runTurn(t.request("k3", "Can I book?")));
    expect(view.failures).toEqual([{ kind: "summary", cause: "call:summary:empty" }]);
    expect(view.receipts.map((r) => r.kind)).toEqual(["summary", "summary", "main"]);
    expect(t.small.calls).toBe(2);
  });

  it("a summary out of attempts stays uncertain, with the last cause", async () => {
    const t = await cold({
      script: [scriptedText("9 to 5."), scriptedText("10 to 4.")],
      smallScript: [scriptedText(""), scriptedText("")],
      config: { longContext: POLICY, callAttempts: 2 },
    });
    expect((await t.runner.runTurn(t.request("k3", "Can I book?"))).status).toBe(
      "reconciliation_required",
    );
    expect(t.uncertain.map((e) => e.cause)).toEqual(["call:summary:empty"]);
  });

  it("without callAttempts an empty summary stays uncertain at once, as before", async () => {
    const t = await cold({
      script: [scriptedText("9 to 5."), scriptedText("10 to 4.")],
      smallScript: [scriptedText("")],
    });
    expect((await t.runner.runTurn(t.request("k3", "Can I book?"))).status).toBe(
      "reconciliation_required",
    );
    expect(t.uncertain.map((e) => e.cause)).toEqual(["call:summary:empty"]);
    expect(t.small.calls).toBe(1);
  });
});

describe("what is not tried again (spec: call-retry)", () => {
  it("cancellation: the caller's signal ends the call, no other attempt", async () => {
    const t = setup({
      script: [scriptedHang(), scriptedText("never")],
      config: { callAttempts: 3 },
    });
    const controller = new AbortController();
    const pending = t.runner.runTurn({ ...t.request("k1"), signal: controller.signal });
    for (let i = 0; i < 1000 && t.model.calls === 0; i++) await new Promise((r) => setImmediate(r));
    controller.abort();
    expect((await pending).status).toBe("reconciliation_required");
    expect(t.uncertain.map((e) => e.cause)).toEqual(["cancelled"]);
    expect(t.model.calls).toBe(1);
  });
});
