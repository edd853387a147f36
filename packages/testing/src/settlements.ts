import {
  type CostReceipt,
  type CostSettlementStore,
  InvalidScopeError,
  SettlementConflictError,
  type SettlementInput,
  type SettlementRecord,
  type SpendStore,
  ValidationError,
} from "@alma-harness/core";
import {
  type Closable,
  contractSuite,
  deepFrozen,
  type Factory,
  fixtureTest,
  type FixtureTest,
  refusesBadIds,
  refusesBadScopes,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  settleAll,
  T0,
  type TestApi,
  unsafe,
} from "./harness.js";
import { listingTests } from "./listing.js";

export interface SettlementFixture extends Closable {
  readonly settlements: CostSettlementStore;
  /** The spend counters the settlement store moves. */
  readonly spend: SpendStore;
}

type Declare = FixtureTest<SettlementFixture>;

export const DAY = "2026-01-01";

export function settlementOf(
  settlementId: string,
  over: Partial<Omit<SettlementInput, "receipt">> & {
    readonly receipt?: Partial<CostReceipt>;
  } = {},
): SettlementInput {
  const { receipt, ...rest } = over;
  return {
    scope: SCOPE_A,
    sessionId: "s1",
    day: DAY,
    at: T0,
    consumers: ["ledger"],
    ...rest,
    receipt: {
      settlementId,
      operationId: `op-${settlementId}`,
      turnId: "turn-1",
      kind: "main",
      clientId: "anthropic",
      model: "claude-test",
      serviceTier: "standard",
      usage: { inputTokens: 100, outputTokens: 20 },
      usdMicros: 1_500,
      priceVersion: "prices-1",
      capsCrossed: [],
      ...receipt,
    },
  };
}

const ids = (records: readonly SettlementRecord[]) => records.map((r) => r.receipt.settlementId);

/** The `CostSettlementStore` contract: one receipt per id, counters moved once, obligations acknowledged once. */
export function costSettlementStoreContract(
  name: string,
  factory: Factory<SettlementFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: CostSettlementStore contract`, factory, [
    settleTests,
    readTests,
    pendingTests,
    validationTests,
  ]);
}

function settleTests(t: TestApi, test: Declare): void {
  test("settle applies a receipt once and moves the session and tenant-day counters", async ({
    settlements,
    spend,
  }) => {
    const applied = await settlements.settle(settlementOf("st-1"));
    t.expect(applied).toEqual({ ...settlementOf("st-1"), status: "applied" });
    t.expect(deepFrozen(applied)).toBe(true);
    t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 1_500,
      tenantDayMicros: 1_500,
    });
    await settlements.settle(settlementOf("st-2", { receipt: { usdMicros: 500 } }));
    t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 2_000,
      tenantDayMicros: 2_000,
    });
  });

  test("a replay with equal input returns the original as replayed and moves nothing", async ({
    settlements,
    spend,
  }) => {
    const applied = await settlements.settle(settlementOf("st-1"));
    const replayed = await settlements.settle(settlementOf("st-1"));
    t.expect(replayed).toEqual({ ...applied, status: "replayed" });
    t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 1_500,
      tenantDayMicros: 1_500,
    });
    t.expect((await settlements.get(SCOPE_A, "st-1"))?.status).toBe("applied");
  });

  test("a replay with different input throws SettlementConflictError and moves nothing", async ({
    settlements,
    spend,
  }) => {
    await settlements.settle(settlementOf("st-1"));
    const changes = [
      { receipt: { usdMicros: 1_501 } },
      { receipt: { usage: { inputTokens: 100, outputTokens: 20, cacheReadTokens: 0 } } },
      { consumers: ["ledger", "crm"] },
      { sessionId: "s2" },
      { at: T0 + 1 },
    ];
    for (const over of changes)
      await rejects(
        t,
        () => settlements.settle(settlementOf("st-1", over)),
        SettlementConflictError,
        "settlement_conflict",
      );
    t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 1_500,
      tenantDayMicros: 1_500,
    });
    t.expect(await spend.peek(SCOPE_A, "s2", DAY)).toEqual({
      sessionMicros: 0,
      tenantDayMicros: 1_500,
    });
  });

  test("of many concurrent equal settles exactly one applies, and the counters move once", async ({
    settlements,
    spend,
  }) => {
    const { ok } = await settleAll(
      Array.from({ length: 10 }, () => settlements.settle(settlementOf("st-1"))),
    );
    t.expect(ok.filter((r) => r.status === "applied")).toHaveLength(1);
    t.expect(ok.filter((r) => r.status === "replayed")).toHaveLength(9);
    t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
      sessionMicros: 1_500,
      tenantDayMicros: 1_500,
    });
  });

  test("optional usage zeros stay distinct from absence, and the record reads back exactly", async ({
    settlements,
  }) => {
    const input = settlementOf("st-0", {
      receipt: {
        usage: { inputTokens: 0, outputTokens: 0, cacheWrite1hTokens: 0 },
        capsCrossed: ["perSessionUsd"],
      },
    });
    await settlements.settle(input);
    t.expect(await settlements.get(SCOPE_A, "st-0")).toEqual({ ...input, status: "applied" });
  });
}

function readTests(t: TestApi, test: Declare): void {
  test("get and list read only the caller's scope, whatever id is passed", async ({
    settlements,
  }) => {
    await settlements.settle(settlementOf("st-1"));
    for (const other of [SCOPE_A2, SCOPE_B]) {
      t.expect(await settlements.get(other, "st-1")).toBeUndefined();
      t.expect(await settlements.list(other)).toEqual({ items: [] });
      t.expect(await settlements.pending(other, "ledger")).toEqual([]);
    }
    t.expect(
      (
        await settlements.settle(
          settlementOf("st-1", { scope: SCOPE_B, receipt: { usdMicros: 9 } }),
        )
      ).status,
    ).toBe("applied");
  });

  test("list is ascending by (at, settlementId) and filters by session and turn", async ({
    settlements,
  }) => {
    await settlements.settle(settlementOf("st-c", { at: T0 + 1 }));
    await settlements.settle(settlementOf("st-b", { at: T0 + 2, sessionId: "s2" }));
    await settlements.settle(settlementOf("st-a", { at: T0 + 1, receipt: { turnId: "turn-2" } }));
    t.expect(ids((await settlements.list(SCOPE_A)).items)).toEqual(["st-a", "st-c", "st-b"]);
    t.expect(ids((await settlements.list(SCOPE_A, { sessionId: "s1" })).items)).toEqual([
      "st-a",
      "st-c",
    ]);
    t.expect(ids((await settlements.list(SCOPE_A, { turnId: "turn-2" })).items)).toEqual(["st-a"]);
    t.expect(
      ids((await settlements.list(SCOPE_A, { sessionId: "s2", turnId: "turn-2" })).items),
    ).toEqual([]);
    for (const r of (await settlements.list(SCOPE_A)).items) t.expect(r.status).toBe("applied");
  });

  listingTests<SettlementFixture>(t, test, {
    what: "settlements",
    def: 50,
    max: 100,
    seed: async (fx, n, scope) => {
      for (let i = 0; i < n; i++)
        await fx.settlements.settle(
          settlementOf(`st-${String(i).padStart(3, "0")}`, { scope, at: T0 + i }),
        );
    },
    list: (fx, scope, opts) => fx.settlements.list(scope, opts),
    key: (item) => (item as SettlementRecord).receipt.settlementId,
  });
}

function pendingTests(t: TestApi, test: Declare): void {
  test("pending lists applied receipts a consumer has not acknowledged, ascending", async ({
    settlements,
  }) => {
    await settlements.settle(settlementOf("st-2", { at: T0 + 2, consumers: ["ledger", "crm"] }));
    await settlements.settle(settlementOf("st-1", { at: T0 + 1 }));
    await settlements.settle(settlementOf("st-3", { at: T0 + 3, consumers: [] }));
    t.expect(ids(await settlements.pending(SCOPE_A, "ledger"))).toEqual(["st-1", "st-2"]);
    t.expect(ids(await settlements.pending(SCOPE_A, "crm"))).toEqual(["st-2"]);
    t.expect(ids(await settlements.pending(SCOPE_A, "ledger", 1))).toEqual(["st-1"]);
    t.expect(await settlements.pending(SCOPE_A, "nobody")).toEqual([]);
  });

  test("acknowledge is idempotent and per consumer", async ({ settlements }) => {
    await settlements.settle(settlementOf("st-1", { consumers: ["ledger", "crm"] }));
    await settlements.acknowledge(SCOPE_A, "ledger", "st-1");
    await settlements.acknowledge(SCOPE_A, "ledger", "st-1");
    t.expect(await settlements.pending(SCOPE_A, "ledger")).toEqual([]);
    t.expect(ids(await settlements.pending(SCOPE_A, "crm"))).toEqual(["st-1"]);
    await settlements.acknowledge(SCOPE_A, "ledger", "unknown");
    await settlements.acknowledge(SCOPE_A, "stranger", "st-1");
  });

  test("a replayed settlement never recreates an acknowledged obligation", async ({
    settlements,
  }) => {
    await settlements.settle(settlementOf("st-1"));
    await settlements.acknowledge(SCOPE_A, "ledger", "st-1");
    await settlements.settle(settlementOf("st-1"));
    t.expect(await settlements.pending(SCOPE_A, "ledger")).toEqual([]);
  });

  test("another scope's acknowledgement acknowledges nothing here", async ({ settlements }) => {
    await settlements.settle(settlementOf("st-1"));
    await settlements.acknowledge(SCOPE_B, "ledger", "st-1");
    await settlements.acknowledge(SCOPE_A2, "ledger", "st-1");
    t.expect(ids(await settlements.pending(SCOPE_A, "ledger"))).toEqual(["st-1"]);
  });
}

function validationTests(t: TestApi, test: Declare): void {
  test("invalid scopes, ids and settlement input are refused before any I/O (even on a closed store)", async ({
    settlements,
  }, closeNow) => {
    await closeNow();
    await refusesBadScopes(
      t,
      (scope) => settlements.settle(settlementOf("st-1", { scope })),
      (scope) => settlements.get(scope, "st-1"),
      (scope) => settlements.list(scope),
      (scope) => settlements.pending(scope, "ledger"),
      (scope) => settlements.acknowledge(scope, "ledger", "st-1"),
    );
    await refusesBadIds(
      t,
      (id) => settlements.settle(settlementOf(id)),
      (id) => settlements.settle(settlementOf("st-1", { consumers: [id] })),
      (id) => settlements.get(SCOPE_A, id),
      (id) => settlements.pending(SCOPE_A, id),
      (id) => settlements.acknowledge(SCOPE_A, "ledger", id),
    );
    const bad: unknown[] = [
      { day: "2026-02-30" },
      { day: "01/01/2026" },
      { consumers: Array.from({ length: 17 }, (_, i) => `c${i}`) },
      { consumers: ["a", "a"] },
      { receipt: { usdMicros: -1 } },
      { receipt: { usdMicros: 0.5 } },
      { receipt: { serviceTier: "turbo" } },
      { receipt: { capsCrossed: ["perYearUsd"] } },
      { receipt: { usage: { inputTokens: 1 } } },
      { receipt: { extra: 1 } },
      { extra: 1 },
    ];
    for (const over of bad)
      await rejects(
        t,
        () => settlements.settle(settlementOf("st-1", unsafe(over))),
        ValidationError,
      );
    await rejects(t, () => settlements.pending(SCOPE_A, "ledger", 101), ValidationError);
  });
}

/** The `SpendStore` contract: per-session and per-tenant-day counters, moved only by settlement. */
export function spendStoreContract(
  name: string,
  factory: Factory<SettlementFixture>,
  t: TestApi,
): void {
  const test = fixtureTest(t, factory);
  t.describe(`${name}: SpendStore contract`, () => {
    test("nothing settled reads zero", async ({ spend }) => {
      t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
        sessionMicros: 0,
        tenantDayMicros: 0,
      });
      t.expect(await spend.tenantDays("org-a")).toEqual([]);
    });

    test("sessions count per scope; tenant-days per org and day, across the org's people", async ({
      settlements,
      spend,
    }) => {
      await settlements.settle(settlementOf("st-1", { receipt: { usdMicros: 100 } }));
      await settlements.settle(
        settlementOf("st-2", { scope: SCOPE_A2, receipt: { usdMicros: 20 } }),
      );
      await settlements.settle(settlementOf("st-3", { scope: SCOPE_B, receipt: { usdMicros: 3 } }));
      await settlements.settle(
        settlementOf("st-4", { day: "2026-01-02", receipt: { usdMicros: 4_000 } }),
      );
      t.expect(await spend.peek(SCOPE_A, "s1", DAY)).toEqual({
        sessionMicros: 4_100,
        tenantDayMicros: 120,
      });
      t.expect(await spend.peek(SCOPE_A2, "s1", DAY)).toEqual({
        sessionMicros: 20,
        tenantDayMicros: 120,
      });
      t.expect(await spend.peek(SCOPE_B, "s1", DAY)).toEqual({
        sessionMicros: 3,
        tenantDayMicros: 3,
      });
      t.expect(await spend.peek(SCOPE_A, "s1", "2026-01-02")).toEqual({
        sessionMicros: 4_100,
        tenantDayMicros: 4_000,
      });
    });

    test("tenantDays lists a tenant's days ascending, within an inclusive range", async ({
      settlements,
      spend,
    }) => {
      for (const [i, day] of ["2026-01-03", "2026-01-01", "2026-01-02"].entries()) {
        await settlements.settle(
          settlementOf(`st-${i}`, { day, receipt: { usdMicros: 10 * (i + 1) } }),
        );
      }
      await settlements.settle(settlementOf("st-b", { scope: SCOPE_B, day: "2026-01-02" }));
      t.expect(await spend.tenantDays("org-a")).toEqual([
        { day: "2026-01-01", usdMicros: 20 },
        { day: "2026-01-02", usdMicros: 30 },
        { day: "2026-01-03", usdMicros: 10 },
      ]);
      t.expect(await spend.tenantDays("org-a", { from: "2026-01-02", to: "2026-01-02" })).toEqual([
        { day: "2026-01-02", usdMicros: 30 },
      ]);
      t.expect((await spend.tenantDays("org-a", { from: "2026-01-03" })).map((d) => d.day)).toEqual(
        ["2026-01-03"],
      );
      t.expect((await spend.tenantDays("org-a", { to: "2026-01-01" })).map((d) => d.day)).toEqual([
        "2026-01-01",
      ]);
    });

    test("invalid scopes, orgs, ids and days are refused before any I/O (even on a closed store)", async ({
      spend,
    }, closeNow) => {
      await closeNow();
      await refusesBadScopes(t, (scope) => spend.peek(scope, "s1", DAY));
      for (const org of ["", "org a", ".org", 7])
        await rejects(t, () => spend.tenantDays(unsafe(org)), InvalidScopeError);
      await refusesBadIds(t, (id) => spend.peek(SCOPE_A, id, DAY));
      await rejects(t, () => spend.peek(SCOPE_A, "s1", "2026-13-01"), ValidationError);
      await rejects(t, () => spend.tenantDays("org-a", { from: "yesterday" }), ValidationError);
    });
  });
}
