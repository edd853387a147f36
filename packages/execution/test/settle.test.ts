import type { Usage } from "@alma-harness/core";
import { InMemoryCostSettlementStore } from "@alma-harness/core/testing";
import { describe, expect, it } from "vitest";
import { answer, CHOICE, client, identity, options, REQUEST, SCOPE, setup } from "./fixtures.js";

const USAGE: Usage = { inputTokens: 10, outputTokens: 5 };
const DAY = "2026-01-01";

async function settleOne(s: ReturnType<typeof setup>, n: number, usage: Usage = USAGE) {
  const outcome = await s.calls.run(
    identity(n),
    client(undefined, answer("hi", usage)),
    CHOICE,
    REQUEST,
    options(s.account),
  );
  if (outcome.status !== "settled") throw new Error(`expected settled, got ${outcome.status}`);
  return outcome.receipt;
}

describe("settlement", () => {
  it("settles known usage once: priced, one settlement with a stable id, journal completed, spend moved, cost trail", async () => {
    const s = setup();
    const receipt = await settleOne(s, 1);
    expect(receipt).toEqual({
      settlementId: "t1:main:1:settlement",
      operationId: "t1:main:1",
      turnId: "t1",
      kind: "main",
      clientId: "c",
      model: "m",
      serviceTier: "standard",
      usage: USAGE,
      usdMicros: 105,
      priceVersion: "p-1",
      capsCrossed: [],
    });
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "completed",
      settlementId: "t1:main:1:settlement",
      evidence: { status: "known" },
    });
    expect(await s.spend.peek(SCOPE, "s1", DAY)).toEqual({
      sessionMicros: 105,
      tenantDayMicros: 105,
    });
    expect(s.account).toMatchObject({ spentMicros: 105, calls: 1 });
    expect(s.audit.trail("cost").map((e) => [e.operationId, e.usdMicros, e.settlementId])).toEqual([
      ["t1:main:1", 105, "t1:main:1:settlement"],
    ]);
  });
});

describe("caps crossed and warnings", () => {
  it("a receipt records the caps its settlement crossed (strictly over), each warned once per turn", async () => {
    const s = setup({
      caps: {
        perTurnUsd: { usd: 0.0002, onExceeded: "warn" },
        perSessionUsd: 0.0002,
        perTenantDayUsd: 0.0001,
      },
    });
    const first = await settleOne(s, 1);
    expect(first.capsCrossed).toEqual(["perTenantDayUsd"]);
    const second = await settleOne(s, 2);
    expect(second.capsCrossed).toEqual(["perTurnUsd", "perSessionUsd"]);
    expect(s.audit.trail("cost").map((e) => [e.operationId, e.usdMicros, e.warning])).toEqual([
      ["t1:main:1", 105, { cap: "perTenantDayUsd", action: "warn" }],
      ["t1:main:2", 105, { cap: "perTurnUsd", action: "warn" }],
      ["t1:main:2", 0, { cap: "perSessionUsd", action: "warn" }],
    ]);
  });

  it("a cap crossed again later in the turn is not warned again", async () => {
    const s = setup({ caps: { perSessionUsd: 0.0001 } });
    expect((await settleOne(s, 1)).capsCrossed).toEqual(["perSessionUsd"]);
    expect((await settleOne(s, 2)).capsCrossed).toEqual([]);
    expect(s.audit.trail("cost").map((e) => e.warning)).toEqual([
      { cap: "perSessionUsd", action: "warn" },
      undefined,
    ]);
  });

  it("spend exactly at a cap crosses nothing", async () => {
    const s = setup({ caps: { perTurnUsd: { usd: 0.000105, onExceeded: "warn" } } });
    expect((await settleOne(s, 1)).capsCrossed).toEqual([]);
  });
});

describe("one accounting path", () => {
  it("a replay of a settlement id with the same receipt returns the original and moves spend once", async () => {
    const settlements = new InMemoryCostSettlementStore();
    const a = setup({ settlements });
    const b = setup({ settlements });
    await settleOne(a, 1);
    await settleOne(b, 1);
    expect(b.account.receipts).toEqual(a.account.receipts);
    expect(await settlements.spend.peek(SCOPE, "s1", DAY)).toEqual({
      sessionMicros: 105,
      tenantDayMicros: 105,
    });
  });

  it("the same settlement id with different input is uncertain (settlement_conflict); the journal stays received", async () => {
    const settlements = new InMemoryCostSettlementStore();
    await settleOne(setup({ settlements }), 1);
    const b = setup({ settlements });
    await expect(settleOne(b, 1, { ...USAGE, outputTokens: 6 })).rejects.toMatchObject({
      uncertainCause: "call:main:settlement_conflict",
    });
    expect((await b.journal.get(SCOPE, "t1:main:1"))?.state).toBe("received");
    expect(b.account.spentMicros).toBe(0);
    expect(await settlements.spend.peek(SCOPE, "s1", DAY)).toEqual({
      sessionMicros: 105,
      tenantDayMicros: 105,
    });
  });

  it("a cost trail that cannot be written is uncertain (audit); the settlement stands", async () => {
    const s = setup({ auditFail: (e) => (e.trail === "cost" ? new Error("down") : undefined) });
    await expect(settleOne(s, 1)).rejects.toMatchObject({ uncertainCause: "audit" });
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("completed");
    expect(await s.settlements.get(SCOPE, "t1:main:1:settlement")).toBeDefined();
  });

  it("a refusal that cannot be recorded is uncertain (audit)", async () => {
    const s = setup({ auditFail: new Error("down") });
    await expect(
      s.calls.run(identity(), client(), { ...CHOICE, model: "ghost" }, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "audit" });
  });
});
