import { describe, expect, it } from "vitest";
import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool, type ModelRequest, worstCaseMicros } from "@alma-harness/core";
import {
  scriptedHang,
  scriptedText,
  scriptedToolCall,
  scriptedTorn,
} from "@alma-harness/loop/testing";
import { PRICES, SCOPE, setup, withFaulty } from "./harness.js";

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

  it("a request whose signal is aborted before it is admitted is never admitted: nothing is written, the session stays free", async () => {
    const t = setup({ script: [scriptedText("later")] });
    const controller = new AbortController();
    controller.abort();
    expect(await t.runner.runTurn({ ...t.request("k1"), signal: controller.signal })).toEqual({
      status: "not_admitted",
      reason: "cancelled",
    });
    expect(await t.stores.admissions.holder(SCOPE, t.request("k1").sessionId)).toBeUndefined();
    expect(
      await t.stores.rootResults.get(
        SCOPE,
        conversationRootKey(SCOPE, t.request("k1").sessionId, "k1"),
        t.clock.now(),
      ),
    ).toBeUndefined();
    expect(t.uncertain).toEqual([]);
    // The same key runs once the caller tries again: nothing of the cancelled request was kept.
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
  });

  it("deadline when the run timeout passes", async () => {
    const t = setup({
      script: [scriptedHang()],
      config: { runTimeoutMs: 1000, limits: { roundTimeoutMs: 60_000 } },
    });
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
    expect(t.uncertain[0]).toMatchObject({
      cause: "session_append",
      persisted: false,
      released: true,
    });
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("completed");
    expect(
      (await t.stores.sessions.load(SCOPE, "s1")).messages.filter((m) => m.role === "user"),
    ).toHaveLength(1);
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
    const t = setup({
      tools: [thrower],
      script: [scriptedToolCall({ id: "c1", name: "broken" })],
      config: {
        onUncertainTurn: () => {
          throw new Error("observer");
        },
      },
    });
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
    expect(await t.runner.releaseExpired(SCOPE)).toEqual([]);
    t.clock.advance(1);
    const released = await t.runner.releaseExpired(SCOPE);
    expect(released.map((r) => [r.kind, r.rootKey])).toEqual([
      ["turn", conversationRootKey(SCOPE, "s1", "k1")],
    ]);
    // The turn whose own release failed is told again when maintenance frees it, this time released.
    expect(t.uncertain.map((u) => [u.cause, u.released])).toEqual([
      ["tool:broken", false],
      ["expired", true],
    ]);
    expect((await t.runner.runTurn(t.request("k3"))).status).toBe("completed");
    expect((await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1")))?.status).toBe(
      "reconciliation_required",
    );
  });
});

describe("money held through store faults (spec: caps under concurrency)", () => {
  // Each turn: one answer at the main model's prices. The cap holds one call's worst case, not two.
  const ask = (t: ReturnType<typeof setup>, key: string, sessionId: string) =>
    t.runner.runTurn(t.request(key, "When are you open on Monday?", sessionId));
  async function oneWorstCase(): Promise<number> {
    const dry = setup({ script: [scriptedText("a")] });
    await dry.runner.runTurn(dry.request("k0"));
    const request = dry.model.requests[0] as ModelRequest;
    return (
      worstCaseMicros(
        PRICES,
        {
          clientId: "fake",
          model: request.model,
          maxOutputTokens: request.maxOutputTokens,
          cache: false,
        },
        request,
      ) ?? 0
    );
  }

  it("a claim that took effect and then reported a failure sends nothing, and its reservation keeps counting", async () => {
    const worst = await oneWorstCase();
    const caps = {
      perTenantDayUsd: { usd: Math.floor(worst * 1.5) / 1e6, onExceeded: "block" as const },
    };
    const { t, store: journal } = withFaulty("journal", {
      script: [scriptedText("a"), scriptedText("b")],
      config: { caps },
    });
    journal.failNext("claim", "after");
    expect((await ask(t, "k1", "s1")).status).toBe("reconciliation_required");
    expect(t.uncertain.map((u) => u.cause)).toEqual(["call:main:error"]);
    expect(t.model.calls).toBe(0);
    // The lost acknowledgement may have reserved: fail closed, the next call's worst case does not fit beside it.
    const next = await ask(t, "k2", "s2");
    expect(next.status === "completed" && next.result.budget?.metric).toBe("perTenantDayUsd");
    expect(t.model.calls).toBe(0);
  });

  it("a claim refused before its effect reserves nothing: the next turn fits", async () => {
    const worst = await oneWorstCase();
    const caps = {
      perTenantDayUsd: { usd: Math.floor(worst * 1.5) / 1e6, onExceeded: "block" as const },
    };
    const { t, store: journal } = withFaulty("journal", {
      script: [scriptedText("a")],
      config: { caps },
    });
    journal.failNext("claim", "before");
    expect((await ask(t, "k1", "s1")).status).toBe("reconciliation_required");
    const next = await ask(t, "k2", "s2");
    expect(next.status === "completed" && next.result.terminalReason).toBe("answered");
  });

  it("a settlement that took effect and then reported a failure counts once and frees its reservation", async () => {
    const worst = await oneWorstCase();
    const caps = {
      perTenantDayUsd: { usd: Math.floor(worst * 1.5) / 1e6, onExceeded: "block" as const },
    };
    const { t, store: settlements } = withFaulty("settlements", {
      script: [scriptedText("a"), scriptedText("b")],
      config: { caps },
    });
    settlements.failNext("settle", "after");
    expect((await ask(t, "k1", "s1")).status).toBe("reconciliation_required");
    const day = await t.stores.spend.tenantDays(SCOPE.org);
    expect(day.map((d) => d.usdMicros)).toHaveLength(1);
    const next = await ask(t, "k2", "s2");
    expect(next.status === "completed" && next.result.terminalReason).toBe("answered");
  });
});

describe("the turn's first durable writes (spec: every outcome after the first durable write goes through uncertainty)", () => {
  const key1 = conversationRootKey(SCOPE, "s1", "k1");

  for (const when of ["before", "after"] as const) {
    it(`an admit that fails ${when} its effect is released and rethrown: nothing held, nothing reported, the key runs once later`, async () => {
      const { t, store: admissions } = withFaulty("admissions", { script: [scriptedText("a")] });
      admissions.failNext("admit", when);
      await expect(t.runner.runTurn(t.request("k1"))).rejects.toThrow(
        `injected failure ${when} admit`,
      );
      expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
      expect(t.uncertain).toEqual([]);
      expect(await t.runner.read(SCOPE, key1)).toBeNull();
      expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
      expect(t.model.calls).toBe(1);
    });
  }

  it("an admit whose release cannot be confirmed is uncertain (cause admit): marked, released on the second try, reported", async () => {
    const { t, store: admissions } = withFaulty("admissions", { script: [scriptedText("a")] });
    admissions.failNext("admit", "after");
    admissions.failNext("releaseFailed", "before");
    admissions.failNext("get", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain).toMatchObject([{ cause: "admit", persisted: false, released: true }]);
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
  });

  it("a reserve that fails before its effect frees the session and rethrows", async () => {
    const { t, store: roots } = withFaulty("rootResults", { script: [scriptedText("a")] });
    roots.failNext("reserve", "before");
    await expect(t.runner.runTurn(t.request("k1"))).rejects.toThrow(
      "injected failure before reserve",
    );
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
    expect(t.uncertain).toEqual([]);
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("completed");
  });

  it("a reserve that took effect and lost its acknowledgement is uncertain (cause root_reserve), released, and stays so", async () => {
    const { t, store: roots } = withFaulty("rootResults", { script: [scriptedText("a")] });
    roots.failNext("reserve", "after");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain).toMatchObject([
      { cause: "root_reserve", persisted: false, released: true },
    ]);
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
    expect((await t.runner.read(SCOPE, key1))?.status).toBe("reconciliation_required");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.model.calls).toBe(0);
  });
});

describe("maintenance reports what it frees", () => {
  it("releaseExpired returns each release and reports each turn (cause expired, released, persisted as read)", async () => {
    const { t, store: admissions } = withFaulty("admissions", {
      tools: [thrower],
      script: [scriptedToolCall({ id: "c1", name: "broken" })],
    });
    admissions.failNext("releaseFailed", "before");
    admissions.failNext("get", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect(t.uncertain).toMatchObject([
      { cause: "tool:broken", persisted: false, released: false },
    ]);
    t.clock.advance(120_000 + 15 * 60_000);
    const released = await t.runner.releaseExpired();
    expect(released).toEqual([
      {
        scope: SCOPE,
        sessionId: "s1",
        rootKey: conversationRootKey(SCOPE, "s1", "k1"),
        kind: "turn",
        deadlineAt: expect.any(Number),
      },
    ]);
    expect(t.uncertain.slice(1)).toEqual([
      {
        scope: SCOPE,
        sessionId: "s1",
        rootKey: conversationRootKey(SCOPE, "s1", "k1"),
        cause: "expired",
        persisted: false,
        released: true,
      },
    ]);
    expect(await t.runner.releaseExpired()).toEqual([]);
  });

  it("listUnresolved shows every journal record of a turn without a stored final result, completed calls included", async () => {
    const { t, store: roots } = withFaulty("rootResults", {
      script: [
        scriptedToolCall({ id: "c1", name: "lookup", input: { day: "mon" } }),
        scriptedText("a"),
        scriptedText("b"),
      ],
    });
    roots.failNext("put", "before");
    expect((await t.runner.runTurn(t.request("k1"))).status).toBe("reconciliation_required");
    expect((await t.runner.runTurn(t.request("k2"))).status).toBe("completed");
    const unresolved = await t.runner.listUnresolved(SCOPE);
    expect(unresolved.items.map((r) => [r.rootKey, r.state])).toEqual([
      [conversationRootKey(SCOPE, "s1", "k1"), "completed"],
      [conversationRootKey(SCOPE, "s1", "k1"), "completed"],
    ]);
    // The journal's own listing shows only calls left open: none here.
    expect((await t.stores.journal.list(SCOPE)).items).toEqual([]);
  });
});

describe("an event batch's admission under store faults", () => {
  const batch = {
    scope: SCOPE,
    sessionId: "s1",
    events: [
      {
        id: "m1",
        at: "2026-01-01T00:00:00Z",
        kind: "message" as const,
        role: "user" as const,
        blocks: [{ type: "text" as const, text: "Hello" }],
      },
    ],
  };

  it("an admit that landed and lost its acknowledgement is released and rethrown; the retry records the batch once", async () => {
    const { t, store: admissions } = withFaulty("admissions");
    admissions.failNext("admit", "after");
    await expect(t.runner.recordEvents(batch)).rejects.toThrow("injected failure after admit");
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
    expect(await t.runner.recordEvents(batch)).toEqual({
      status: "recorded",
      appended: 1,
      replayed: 0,
    });
  });

  it("a finish that fails after the batch landed is read back: recorded, and the session is free", async () => {
    const { t, store: admissions } = withFaulty("admissions");
    admissions.failNext("finish", "before");
    expect(await t.runner.recordEvents(batch)).toEqual({
      status: "recorded",
      appended: 1,
      replayed: 0,
    });
    expect(await t.stores.admissions.holder(SCOPE, "s1")).toBeUndefined();
    expect((await t.stores.sessions.load(SCOPE, "s1")).messages).toHaveLength(1);
  });
});
