import {
  type ClaimReservation,
  type ClaimResult,
  type ExecutionResultStore,
  FenceError,
  InvalidIdError,
  ValidationError,
} from "@alma-harness/core";
import { admitWith } from "./admissions.js";
import { claimOf } from "./execution.js";
import {
  type Closable,
  contractSuite,
  type Factory,
  type FixtureTest,
  rejects,
  SCOPE_A,
  SCOPE_A2,
  SCOPE_B,
  T0,
  type TestApi,
} from "./harness.js";
import type { AdmissionFixture } from "./admissions.js";
import type { ExecutionFixture } from "./execution.js";
import { reservationOf } from "./results.js";
import { DAY, type SettlementFixture, settlementOf } from "./settlements.js";

/** The stores whose writes the admission fences and whose claims hold money: one implementation's set. */
export type GovernedFixture = AdmissionFixture &
  ExecutionFixture &
  SettlementFixture &
  Closable & { readonly rootResults: ExecutionResultStore };

const DEADLINE = T0 + 60_000;

function hold(
  usdMicros: number,
  limits: ClaimReservation["limits"],
  over: Partial<ClaimReservation> = {},
): ClaimReservation {
  return { day: DAY, usdMicros, limits, expiresAt: T0 + 86_400_000, ...over };
}

function status(result: ClaimResult): string {
  return result.status === "refused" ? `refused:${result.cap}` : result.status;
}

/**
 * The promises that hold under concurrency, for every store set (spec: caps under concurrency,
 * claims fenced by the admission): a claim and a final-result `put` commit only while the turn's
 * admission is active and before its deadline; a claim's reservation is taken in its own
 * transaction, never passes a limit, and is released by settlement, cancellation or the sweep.
 */
export function governedWritesContract(
  name: string,
  factory: Factory<GovernedFixture>,
  t: TestApi,
): void {
  contractSuite(t, `${name}: fenced writes and reservations`, factory, [
    fenceTests,
    reservationTests,
    releaseTests,
    concurrencyTests,
  ]);
}

type Declare = FixtureTest<GovernedFixture>;

function fenceTests(t: TestApi, test: Declare): void {
  test("a claim fenced by an active admission commits; after the admission ends it claims nothing", async ({
    admissions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "adm-1" });
    t.expect((await execution.claim(claimOf("op-1"), { admissionId: "adm-1" })).status).toBe(
      "claimed",
    );
    await admissions.finish(SCOPE_A, "adm-1");
    await rejects(
      t,
      () => execution.claim(claimOf("op-2"), { admissionId: "adm-1" }),
      FenceError,
      "fenced",
    );
    t.expect(await execution.get(SCOPE_A, "op-2")).toBeUndefined();
  });

  test("a claim at or after the admission's deadline, or under a released or uncertain one, is fenced", async ({
    admissions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "adm-1", deadlineAt: DEADLINE });
    t.expect(
      (
        await execution.claim(claimOf("op-0", { createdAt: DEADLINE - 1 }), {
          admissionId: "adm-1",
        })
      ).status,
    ).toBe("claimed");
    await rejects(
      t,
      () => execution.claim(claimOf("op-1", { createdAt: DEADLINE }), { admissionId: "adm-1" }),
      FenceError,
    );
    await admissions.markUncertain(SCOPE_A, "adm-1");
    await rejects(t, () => execution.claim(claimOf("op-2"), { admissionId: "adm-1" }), FenceError);
    await admissions.releaseFailed(SCOPE_A, "adm-1");
    await rejects(t, () => execution.claim(claimOf("op-3"), { admissionId: "adm-1" }), FenceError);
    for (const id of ["op-1", "op-2", "op-3"])
      t.expect(await execution.get(SCOPE_A, id)).toBeUndefined();
  });

  test("an admission of another session, another scope, or none at all fences the claim", async ({
    admissions,
    execution,
  }) => {
    await admitWith(admissions, { admissionId: "adm-1", sessionId: "s2" });
    await admitWith(admissions, { admissionId: "adm-b", scope: SCOPE_B });
    await rejects(t, () => execution.claim(claimOf("op-1"), { admissionId: "adm-1" }), FenceError);
    await rejects(t, () => execution.claim(claimOf("op-2"), { admissionId: "adm-b" }), FenceError);
    await rejects(
      t,
      () => execution.claim(claimOf("op-3"), { admissionId: "adm-none" }),
      FenceError,
    );
  });

  test("a taken-over admission's stale owner stores no final result; the active owner does", async ({
    admissions,
    rootResults,
  }) => {
    await admitWith(admissions, { admissionId: "adm-old", deadlineAt: DEADLINE });
    await rootResults.reserve(reservationOf("root-1", { expiresAt: T0 + 86_400_000 }));
    await admissions.releaseExpired({ now: DEADLINE + 1, graceMs: 0 });
    await admitWith(admissions, {
      admissionId: "adm-new",
      now: DEADLINE + 2,
      deadlineAt: DEADLINE + 60_000,
    });
    await rejects(
      t,
      () =>
        rootResults.put(SCOPE_A, "root-1", { v: "stale" }, DEADLINE + 3, {
          admissionId: "adm-old",
        }),
      FenceError,
    );
    t.expect((await rootResults.get(SCOPE_A, "root-1", DEADLINE + 3))?.state).toBe("reserved");
    t.expect(
      (
        await rootResults.put(SCOPE_A, "root-1", { v: "fresh" }, DEADLINE + 3, {
          admissionId: "adm-new",
        })
      ).state,
    ).toBe("stored");
  });

  test("a put past the admission's deadline is fenced, one millisecond before it is not", async ({
    admissions,
    rootResults,
  }) => {
    await admitWith(admissions, { admissionId: "adm-1", deadlineAt: DEADLINE });
    await rootResults.reserve(reservationOf("root-1", { expiresAt: T0 + 86_400_000 }));
    await rootResults.reserve(reservationOf("root-2", { expiresAt: T0 + 86_400_000 }));
    await rejects(
      t,
      () => rootResults.put(SCOPE_A, "root-1", { v: 1 }, DEADLINE, { admissionId: "adm-1" }),
      FenceError,
    );
    t.expect(
      (await rootResults.put(SCOPE_A, "root-2", { v: 1 }, DEADLINE - 1, { admissionId: "adm-1" }))
        .state,
    ).toBe("stored");
  });

  test("malformed options are refused before any write", async ({ execution }) => {
    await rejects(
      t,
      () => execution.claim(claimOf("op-1"), { admissionId: "has space" }),
      InvalidIdError,
    );
    await rejects(
      t,
      () => execution.claim(claimOf("op-1"), { reservation: hold(-1, {}) }),
      ValidationError,
    );
    await rejects(
      t,
      () =>
        execution.claim(claimOf("op-1"), { reservation: { ...hold(1, {}), extra: 1 } as never }),
      ValidationError,
    );
    await rejects(
      t,
      () => execution.claim(claimOf("op-1"), { reservation: hold(1, { perWeekUsd: 1 } as never) }),
      ValidationError,
    );
    t.expect(await execution.get(SCOPE_A, "op-1")).toBeUndefined();
  });
}

function reservationTests(t: TestApi, test: Declare): void {
  test("a reservation fits at the limit exactly; one micro-dollar over is refused and claims nothing", async ({
    execution,
  }) => {
    t.expect(
      status(
        await execution.claim(claimOf("op-1"), {
          reservation: hold(600, { perSessionUsd: 1_000 }),
        }),
      ),
    ).toBe("claimed");
    t.expect(
      status(
        await execution.claim(claimOf("op-2"), {
          reservation: hold(401, { perSessionUsd: 1_000 }),
        }),
      ),
    ).toBe("refused:perSessionUsd");
    t.expect(await execution.get(SCOPE_A, "op-2")).toBeUndefined();
    t.expect(
      status(
        await execution.claim(claimOf("op-3"), {
          reservation: hold(400, { perSessionUsd: 1_000 }),
        }),
      ),
    ).toBe("claimed");
  });

  test("settled spend counts with what is held: a settlement's actual price replaces its reservation", async ({
    execution,
    settlements,
  }) => {
    const limits = { perSessionUsd: 2_000 };
    t.expect(
      status(await execution.claim(claimOf("op-1"), { reservation: hold(1_800, limits) })),
    ).toBe("claimed");
    t.expect(
      status(await execution.claim(claimOf("op-2"), { reservation: hold(500, limits) })),
    ).toBe("refused:perSessionUsd");
    // op-1 settles at 1,500 (the fixture's receipt): 500 is free again.
    await settlements.settle(settlementOf("op-1:settlement", { receipt: { operationId: "op-1" } }));
    t.expect(
      status(await execution.claim(claimOf("op-2"), { reservation: hold(500, limits) })),
    ).toBe("claimed");
    t.expect(status(await execution.claim(claimOf("op-3"), { reservation: hold(1, limits) }))).toBe(
      "refused:perSessionUsd",
    );
  });

  test("a session limit counts that session only; a tenant-day limit counts every session of the org that day", async ({
    execution,
  }) => {
    const day = { perTenantDayUsd: 1_000 };
    t.expect(
      status(
        await execution.claim(claimOf("op-1"), {
          reservation: hold(700, { perSessionUsd: 700, ...day }),
        }),
      ),
    ).toBe("claimed");
    t.expect(
      status(
        await execution.claim(claimOf("op-2", { sessionId: "s2" }), {
          reservation: hold(300, { perSessionUsd: 300 }),
        }),
      ),
    ).toBe("claimed");
    t.expect(
      status(
        await execution.claim(claimOf("op-3", { scope: SCOPE_A2, sessionId: "s3" }), {
          reservation: hold(1, day),
        }),
      ),
    ).toBe("refused:perTenantDayUsd");
    t.expect(
      status(
        await execution.claim(claimOf("op-4", { scope: SCOPE_B }), {
          reservation: hold(1_000, day),
        }),
      ),
    ).toBe("claimed");
    t.expect(
      status(
        await execution.claim(claimOf("op-5", { scope: SCOPE_A2 }), {
          reservation: hold(1_000, day, { day: "2026-01-02" }),
        }),
      ),
    ).toBe("claimed");
  });

  test("a reservation past its expiry no longer counts", async ({ execution }) => {
    const limits = { perSessionUsd: 1_000 };
    t.expect(
      status(
        await execution.claim(claimOf("op-1"), {
          reservation: hold(1_000, limits, { expiresAt: T0 + 10 }),
        }),
      ),
    ).toBe("claimed");
    t.expect(
      status(
        await execution.claim(claimOf("op-2", { createdAt: T0 + 9 }), {
          reservation: hold(1, limits),
        }),
      ),
    ).toBe("refused:perSessionUsd");
    t.expect(
      status(
        await execution.claim(claimOf("op-3", { createdAt: T0 + 10 }), {
          reservation: hold(1_000, limits),
        }),
      ),
    ).toBe("claimed");
  });

  test("a retried claim (same input) is `exists` and reserves nothing more", async ({
    execution,
  }) => {
    const limits = { perSessionUsd: 1_000 };
    t.expect(
      status(await execution.claim(claimOf("op-1"), { reservation: hold(600, limits) })),
    ).toBe("claimed");
    t.expect(
      status(await execution.claim(claimOf("op-1"), { reservation: hold(600, limits) })),
    ).toBe("exists");
    t.expect(
      status(await execution.claim(claimOf("op-2"), { reservation: hold(400, limits) })),
    ).toBe("claimed");
  });
}

function releaseTests(t: TestApi, test: Declare): void {
  test("cancelling a prepared claim releases its reservation in the same write", async ({
    execution,
  }) => {
    const limits = { perTenantDayUsd: 1_000 };
    const first = await execution.claim(claimOf("op-1"), { reservation: hold(1_000, limits) });
    if (first.status !== "claimed") throw new Error("expected a claim");
    t.expect(status(await execution.claim(claimOf("op-2"), { reservation: hold(1, limits) }))).toBe(
      "refused:perTenantDayUsd",
    );
    await execution.cancelPrepared(first.fence, "aborted", T0 + 1);
    t.expect(
      status(await execution.claim(claimOf("op-2"), { reservation: hold(1_000, limits) })),
    ).toBe("claimed");
  });

  test("the sweep releases what a never-sent claim held, and keeps what a possibly-sent one holds", async ({
    execution,
  }) => {
    const limits = { perSessionUsd: 1_000 };
    const sent = await execution.claim(claimOf("op-sent", { deadlineAt: T0 + 5 }), {
      reservation: hold(400, limits),
    });
    if (sent.status !== "claimed") throw new Error("expected a claim");
    await execution.dispatch(sent.fence, T0 + 1);
    t.expect(
      status(
        await execution.claim(claimOf("op-idle", { deadlineAt: T0 + 5 }), {
          reservation: hold(600, limits),
        }),
      ),
    ).toBe("claimed");
    await execution.reconcileExpired({ now: T0 + 5 });
    t.expect(
      status(
        await execution.claim(claimOf("op-next", { createdAt: T0 + 6 }), {
          reservation: hold(601, limits),
        }),
      ),
    ).toBe("refused:perSessionUsd");
    t.expect(
      status(
        await execution.claim(claimOf("op-next", { createdAt: T0 + 6 }), {
          reservation: hold(600, limits),
        }),
      ),
    ).toBe("claimed");
  });
}

function concurrencyTests(t: TestApi, test: Declare): void {
  test("twenty concurrent claims under one tenant-day limit: exactly the ones that fit are claimed", async ({
    execution,
  }) => {
    const limits = { perTenantDayUsd: 10_000 };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        execution.claim(
          claimOf(`op-${i}`, { scope: i % 2 === 0 ? SCOPE_A : SCOPE_A2, sessionId: `s${i}` }),
          { reservation: hold(2_500, limits) },
        ),
      ),
    );
    t.expect(results.filter((r) => r.status === "claimed")).toHaveLength(4);
    t.expect(results.filter((r) => r.status === "refused")).toHaveLength(16);
  });

  test("concurrent claims on one session under a session limit never hold more than it", async ({
    execution,
  }) => {
    const limits = { perSessionUsd: 5_000 };
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        execution.claim(claimOf(`op-${i}`), { reservation: hold(1_000, limits) }),
      ),
    );
    t.expect(results.filter((r) => r.status === "claimed")).toHaveLength(5);
  });
}
