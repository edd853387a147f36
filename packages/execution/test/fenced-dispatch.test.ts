import {
  type ExecutionStore,
  normalizeBudgetCaps,
  utcDay,
  worstCaseMicros,
} from "@alma-harness/core";
import {
  InMemoryAdmissionStore,
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  ManualClock,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import { GovernedCalls, UncertainCallError } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, NOW, options, PRICES, REQUEST, SCOPE } from "./fixtures.js";

const WORST = worstCaseMicros(PRICES, CHOICE, REQUEST) as number;

/**
 * A governed call over the memory stores with admissions linked (the journal's claims and
 * dispatches are scope-fenced), a session block cap that holds exactly one call's worst case, and
 * a journal whose next dispatch first runs `before` (the operator's fence landing between the
 * claim and the dispatch).
 */
async function fencedSetup() {
  const admissions = new InMemoryAdmissionStore();
  const settlements = new InMemoryCostSettlementStore();
  const inner = new InMemoryExecutionStore({ admissions, spend: settlements.spend });
  const hooks: { before?: () => Promise<unknown>; cancelFails?: boolean } = {};
  const journal: ExecutionStore = {
    claim: (...args) => inner.claim(...args),
    receive: (...args) => inner.receive(...args),
    settle: (...args) => inner.settle(...args),
    complete: (...args) => inner.complete(...args),
    get: (...args) => inner.get(...args),
    list: (...args) => inner.list(...args),
    reconcileExpired: (...args) => inner.reconcileExpired(...args),
    dispatch: async (...args: Parameters<ExecutionStore["dispatch"]>) => {
      const before = hooks.before;
      hooks.before = undefined;
      await before?.();
      return inner.dispatch(...args);
    },
    cancelPrepared: async (...args: Parameters<ExecutionStore["cancelPrepared"]>) => {
      if (hooks.cancelFails) throw new Error("injected failure before cancelPrepared");
      return inner.cancelPrepared(...args);
    },
  };
  const calls = new GovernedCalls({
    journal,
    settlements,
    spend: settlements.spend,
    prices: PRICES,
    caps: normalizeBudgetCaps({ perSessionUsd: WORST / 1e6 }),
    policyVersion: "policy-1",
    audit: new RecordingAuditLog(),
    clock: new ManualClock(),
  });
  const admit = (admissionId: string) =>
    admissions.admit({
      scope: SCOPE,
      sessionId: "s1",
      rootKey: "r1",
      kind: "turn",
      admissionId,
      now: NOW,
      deadlineAt: NOW + 600_000,
    });
  await admit("a1");
  const fence = () =>
    admissions.fenceScope({ target: { org: SCOPE.org }, reason: "suspended", now: NOW });
  return { admissions, settlements, inner, hooks, calls, account: calls.account(), fence };
}

describe("GovernedCalls.run: a scope fence landing between the claim and the dispatch", () => {
  it("ends the call scope_fenced without egress: nothing sent, zero spend, the claim cancelled and its reservation released", async () => {
    const s = await fencedSetup();
    const c = client();
    s.hooks.before = s.fence;
    const error = await s.calls
      .run(identity(1, { admissionId: "a1" }), c, CHOICE, REQUEST, options(s.account))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UncertainCallError);
    // The outcome of a fence at the claim: reconciliation, never another attempt.
    expect(error).toMatchObject({ uncertainCause: "scope_fenced" });
    expect((error as UncertainCallError).attempt).toBeUndefined();
    expect(c.streamed).toEqual([]);
    expect(await s.inner.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "scope_fenced",
    });
    expect(s.account).toMatchObject({ spentMicros: 0, reservedMicros: 0 });
    expect(await s.settlements.spend.peek(SCOPE, "s1", utcDay(NOW))).toEqual({
      sessionMicros: 0,
      tenantDayMicros: 0,
    });
    // The session cap holds one worst case: a call after the lift fits only because the first released its reservation.
    await s.admissions.liftScopeFence({ org: SCOPE.org });
    const next = client();
    expect(
      (
        await s.calls.run(
          identity(2, { admissionId: "a1" }),
          next,
          CHOICE,
          REQUEST,
          options(s.account),
        )
      ).status,
    ).toBe("settled");
    expect(next.streamed.length).toBe(1);
  });

  it("a cancel that fails after the refusal still sends nothing; the record stays prepared until the sweep releases it", async () => {
    const s = await fencedSetup();
    const c = client();
    s.hooks.before = s.fence;
    s.hooks.cancelFails = true;
    await expect(
      s.calls.run(identity(1, { admissionId: "a1" }), c, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "scope_fenced" });
    expect(c.streamed).toEqual([]);
    expect(await s.inner.get(SCOPE, "t1:main:1")).toMatchObject({ state: "prepared" });
    expect(s.account.reservedMicros).toBe(0);
    const swept = await s.inner.reconcileExpired({ now: NOW + 24 * 3_600_000, scope: SCOPE });
    expect(swept.map((r) => [r.operationId, r.state, r.notDispatchedCause])).toEqual([
      ["t1:main:1", "not_dispatched", "expired"],
    ]);
  });
});
