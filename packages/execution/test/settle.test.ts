import { SettlementConflictError, type Usage } from "@alma-harness/core";
import { InMemoryCostSettlementStore } from "@alma-harness/core/testing";
import { AuditFailedError, UnsettledCallError } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, NOW, REQUEST, SCOPE, setup } from "./fixtures.js";

const USAGE: Usage = { inputTokens: 10, outputTokens: 5 };
const DAY = "2026-01-01";

describe("a prepared call", () => {
  it("commits dispatching before any byte leaves", async () => {
    const s = setup();
    let stateAtEgress: string | undefined;
    const c = client(() => {
      void s.journal.get(SCOPE, "t1:main:1").then((r) => {
        stateAtEgress = r?.state;
      });
    });
    const prepared = await s.calls.prepare(identity(), c, CHOICE, REQUEST, s.ledger, NOW);
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("prepared");
    await prepared.open(new AbortController().signal);
    await Promise.resolve();
    expect(stateAtEgress).toBe("dispatching");
    expect(c.streamed).toHaveLength(1);
    await expect(prepared.open(new AbortController().signal)).rejects.toBeInstanceOf(UnsettledCallError);
    expect(c.streamed).toHaveLength(1);
  });

  it("cancel before open ends the record not dispatched with its cause; after open it changes nothing", async () => {
    const s = setup();
    const a = await s.calls.prepare(identity(1), client(), CHOICE, REQUEST, s.ledger, NOW);
    await a.cancel("aborted");
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({ state: "not_dispatched", notDispatchedCause: "aborted" });
    const b = await s.calls.prepare(identity(2), client(), CHOICE, REQUEST, s.ledger, NOW);
    await b.open(new AbortController().signal);
    await b.cancel("aborted");
    expect((await s.journal.get(SCOPE, "t1:main:2"))?.state).toBe("dispatching");
  });

  it("settles known usage once: priced, one settlement with a stable id, journal completed, spend moved, cost trail", async () => {
    const s = setup();
    const prepared = await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
    await prepared.open(new AbortController().signal);
    const receipt = await prepared.settle({ status: "known", usage: USAGE });
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
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({ state: "completed", settlementId: "t1:main:1:settlement", evidence: { status: "known" } });
    expect(await s.spend.peek(SCOPE, "s1", DAY)).toEqual({ sessionMicros: 105, tenantDayMicros: 105 });
    expect(s.ledger).toMatchObject({ spentMicros: 105, calls: 1 });
    expect(s.audit.trail("cost").map((e) => [e.operationId, e.usdMicros, e.settlementId])).toEqual([["t1:main:1", 105, "t1:main:1:settlement"]]);
    await expect(prepared.settle({ status: "known", usage: USAGE })).rejects.toBeInstanceOf(UnsettledCallError);
    expect(await s.spend.peek(SCOPE, "s1", DAY)).toEqual({ sessionMicros: 105, tenantDayMicros: 105 });
  });

  it("prices by the tier the wire says served", async () => {
    const s = setup();
    const prepared = await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
    await prepared.open(new AbortController().signal);
    const receipt = await prepared.settle({ status: "known", usage: { ...USAGE, serviceTier: "priority" } });
    expect([receipt.serviceTier, receipt.usdMicros]).toEqual(["priority", 210]);
  });

  for (const [name, evidence] of [
    ["unknown usage", { status: "unknown" }],
    ["unpriced usage (a served tier without a row)", { status: "known", usage: { ...USAGE, serviceTier: "flex" } }],
    ["usage with an unpriced counter", { status: "known", usage: { ...USAGE, cacheWrite1hTokens: 3 } }],
  ] as const) {
    it(`${name} cannot be settled: UnsettledCallError, evidence kept, nothing spent`, async () => {
      const s = setup({ prices: { version: "p", models: { m: { rates: { input: 3, output: 15 } } } } });
      const prepared = await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
      await prepared.open(new AbortController().signal);
      await expect(prepared.settle(evidence as never)).rejects.toBeInstanceOf(UnsettledCallError);
      expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("received");
      expect(await s.spend.peek(SCOPE, "s1", DAY)).toEqual({ sessionMicros: 0, tenantDayMicros: 0 });
      expect(s.ledger.receipts).toEqual([]);
      expect(s.audit.trail("cost")).toEqual([]);
    });
  }
});

describe("caps crossed and warnings", () => {
  async function settleOne(s: ReturnType<typeof setup>, n: number, usage: Usage = USAGE) {
    const prepared = await s.calls.prepare(identity(n), client(), CHOICE, REQUEST, s.ledger, NOW);
    await prepared.open(new AbortController().signal);
    return prepared.settle({ status: "known", usage });
  }

  it("a receipt records the caps its settlement crossed (strictly over), each warned once per turn", async () => {
    const s = setup({ caps: { perTurnUsd: { usd: 0.0002, onExceeded: "warn" }, perSessionUsd: 0.0002, perTenantDayUsd: 0.0001 } });
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

  it("a cap already warned in the turn is not warned again", async () => {
    const s = setup({ caps: { perSessionUsd: 0.0001 } });
    s.ledger.warned.add("perSessionUsd");
    expect((await settleOne(s, 1)).capsCrossed).toEqual(["perSessionUsd"]);
    expect(s.audit.trail("cost").map((e) => e.warning)).toEqual([undefined]);
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
    for (const s of [a, b]) {
      const prepared = await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
      await prepared.open(new AbortController().signal);
      await prepared.settle({ status: "known", usage: USAGE });
    }
    expect(b.ledger.receipts).toEqual(a.ledger.receipts);
    expect(await settlements.spend.peek(SCOPE, "s1", DAY)).toEqual({ sessionMicros: 105, tenantDayMicros: 105 });
  });

  it("the same settlement id with different input is a SettlementConflictError; the journal stays received", async () => {
    const settlements = new InMemoryCostSettlementStore();
    const a = setup({ settlements });
    const first = await a.calls.prepare(identity(), client(), CHOICE, REQUEST, a.ledger, NOW);
    await first.open(new AbortController().signal);
    await first.settle({ status: "known", usage: USAGE });
    const b = setup({ settlements });
    const second = await b.calls.prepare(identity(), client(), CHOICE, REQUEST, b.ledger, NOW);
    await second.open(new AbortController().signal);
    await expect(second.settle({ status: "known", usage: { ...USAGE, outputTokens: 6 } })).rejects.toBeInstanceOf(SettlementConflictError);
    expect((await b.journal.get(SCOPE, "t1:main:1"))?.state).toBe("received");
    expect(b.ledger.spentMicros).toBe(0);
    expect(await settlements.spend.peek(SCOPE, "s1", DAY)).toEqual({ sessionMicros: 105, tenantDayMicros: 105 });
  });

  it("a cost trail that cannot be written is AuditFailedError; the settlement stands", async () => {
    const s = setup({ auditFail: (e) => (e.trail === "cost" ? new Error("down") : undefined) });
    const prepared = await s.calls.prepare(identity(), client(), CHOICE, REQUEST, s.ledger, NOW);
    await prepared.open(new AbortController().signal);
    await expect(prepared.settle({ status: "known", usage: USAGE })).rejects.toBeInstanceOf(AuditFailedError);
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("completed");
    expect(await s.settlements.get(SCOPE, "t1:main:1:settlement")).toBeDefined();
  });

  it("a refusal that cannot be recorded is AuditFailedError", async () => {
    const s = setup({ auditFail: new Error("down") });
    await expect(s.calls.prepare(identity(), client(), { ...CHOICE, model: "ghost" }, REQUEST, s.ledger, NOW)).rejects.toBeInstanceOf(AuditFailedError);
  });
});
