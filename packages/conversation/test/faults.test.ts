import { describe, expect, it } from "vitest";
import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool } from "@alma-harness/core";
import { scriptedHang, scriptedText, scriptedToolCall, scriptedTorn } from "@alma-harness/loop/testing";
import { SCOPE, setup, withFaulty } from "./harness.js";

const thrower = defineTool({
  name: "broken",
  description: "Always throws.",
  input: { type: "object" },
  handler: () => {
    throw new Error("boom");
  },
});

describe("why a turn is uncertain, each from a real failure, reported once", () => {
  it("tool:<name> for a thrown handler", async () => {
    const t = setup({ tools: [thrower], script: [scriptedToolCall({ id: "c1", name: "broken" })] });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["tool:broken"]);
    expect(t.uncertain[0]?.released).toBe(true);
  });

  it("call:main:torn:none for a stream without a terminal frame", async () => {
    const t = setup({ script: [scriptedTorn(scriptedText("partial"))] });
    await t.runner.runTurn(t.request("k1"));
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:torn:none"]);
  });

  it("cancelled for the caller's signal, and the session is free afterwards", async () => {
    const t = setup({ script: [scriptedHang(), scriptedText("next")] });
    const controller = new AbortController();
    const pending = t.runner.runTurn({ ...t.request("k1"), signal: controller.signal });
    await new Promise((r) => setImmediate(r));
    controller.abort();
    expect((await pending).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["cancelled"]);
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("completed");
  });

  it("deadline when the run timeout passes", async () => {
    const t = setup({ script: [scriptedHang()], config: { runTimeoutMs: 1000, limits: { roundTimeoutMs: 60_000 } } });
    const pending = t.runner.runTurn(t.request("k1"));
    await new Promise((r) => setImmediate(r));
    t.clock.advance(1000);
    expect((await pending).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["deadline"]);
  });

  it("session_append when the fenced append fails: nothing persisted, released, retry records input once", async () => {
    const { t, store: sessions } = withFaulty("sessions", {
      script: [scriptedText("a"), scriptedText("b")],
    });
    sessions.failNext("append", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain[0]).toMatchObject({ cause: "session_append", persisted: false, released: true });
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("completed");
    expect((await t.stores.sessions.load(SCOPE, "s1")).messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("root_store when the final envelope cannot be stored; persisted is reported true", async () => {
    const { t, store: roots } = withFaulty("rootResults", {
      script: [scriptedText("a")],
    });
    roots.failNext("put", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain[0]).toMatchObject({ cause: "root_store", persisted: true, released: true });
  });

  it("a lost finish acknowledgement is accepted after reading back the finished admission", async () => {
    const { t, store: admissions } = withFaulty("admissions", {
      script: [scriptedText("a")],
    });
    admissions.failNext("finish", "after");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
    expect(t.uncertain).toHaveLength(0);
  });

  it("admission_store when finish fails before its effect", async () => {
    const { t, store: admissions } = withFaulty("admissions", {
      script: [scriptedText("a")],
    });
    admissions.failNext("finish", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["admission_store"]);
  });

  it("session_load when the view cannot be read", async () => {
    const { t, store: sessions } = withFaulty("sessions", {
      script: [],
    });
    sessions.failNext("load", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["session_load"]);
    expect(t.model.calls).toBe(0);
  });

  it("a throwing onUncertainTurn is swallowed", async () => {
    const t = setup({ tools: [thrower], script: [scriptedToolCall({ id: "c1", name: "broken" })], config: { onUncertainTurn: () => { throw new Error("observer"); } } });
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
  });
});

describe("release", () => {
  it("an admission never released is freed fifteen minutes past its deadline", async () => {
    const { t, store: admissions } = withFaulty("admissions", {
      tools: [thrower],
      script: [scriptedToolCall({ id: "c1", name: "broken" }), scriptedText("after")],
    });
    admissions.failNext("releaseFailed", "before");
    await t.runner.runTurn(t.request("k1"));
    expect(t.uncertain[0]).toMatchObject({ released: false });
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("busy");
    t.clock.advance(120_000 + 15 * 60_000 - 1);
    expect(await t.runner.releaseExpired(SCOPE)).toBe(0);
    t.clock.advance(1);
    expect(await t.runner.releaseExpired(SCOPE)).toBe(1);
    expect((await t.runner.runTurn(t.request("k3"))).status).toBe("completed");
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1")))?.status).toBe("reconciliation_required");
  });
});
