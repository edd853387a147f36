import {
  type ClaimReservation,
  type ClaimResult,
  type ExecutionClaim,
  FenceError,
  type Fence,
} from "@alma-harness/core";
import {
  admitWith,
  claimOf,
  DAY,
  SCOPE_A,
  SCOPE_A2,
  settlementOf,
  T0,
} from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { PgAdmissionStore } from "../src/admissions.js";
import { PgExecutionStore } from "../src/execution.js";
import { createPostgresStores, migrate } from "../src/index.js";
import { lockKey, schemaPool } from "../src/pg.js";
import { PgCostSettlementStore } from "../src/settlements.js";
import { DATABASE_URL, hookQueries, pgSuite } from "./support.js";

const { schemas, url, admin, skip } = pgSuite("reserve");

const EXPIRES = T0 + 86_400_000;

function hold(usdMicros: number, limits: ClaimReservation["limits"], day = DAY): ClaimReservation {
  return { day, usdMicros, limits, expiresAt: EXPIRES };
}

/** Deterministic sizes in [lo, hi], so a failure replays. */
function sizes(n: number, seed: number, lo: number, hi: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1_103_515_245 + 12_345) % 2_147_483_648;
    return lo + (x % (hi - lo + 1));
  });
}

/**
 * A pool on `schema` that records what its clients do: statements sent (round trips), errors by
 * SQLSTATE (a deadlock the transaction helper retried would otherwise be invisible), and the most
 * clients checked out at once.
 */
function watchedPool(schema: string, max: number) {
  const pool = schemaPool({ connectionString: url, max }, schema);
  const seen = { statements: 0, errors: [] as string[], inFlight: 0, maxInFlight: 0 };
  const record = (error: unknown) =>
    seen.errors.push((error as { code?: string }).code ?? String(error));
  hookQueries(pool, (args, query) => {
    seen.statements += 1;
    const last = args[args.length - 1];
    if (typeof last === "function") {
      args[args.length - 1] = (error: unknown, result: unknown) => {
        if (error) record(error);
        (last as (e: unknown, r: unknown) => void)(error, result);
      };
      return query(...args);
    }
    return (query(...args) as Promise<unknown>).catch((error: unknown) => {
      record(error);
      throw error;
    });
  });
  pool.on("acquire", () => {
    seen.inFlight += 1;
    seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
  });
  pool.on("release", () => {
    seen.inFlight -= 1;
  });
  return { pool, seen };
}

async function heldMicros(
  schema: string,
  where: string,
  values: readonly unknown[],
): Promise<number> {
  const { rows } = await admin!.query<{ n: string }>(
    `SELECT COALESCE(sum(usd_micros), 0)::text AS n FROM ${schema}.spend_reservations WHERE ${where}`,
    [...values],
  );
  return Number(rows[0]?.n ?? 0);
}

/** Waits (polling the server) until a backend waits on a lock while running a statement matching `fragment`. */
async function blocked(fragment: string): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    const { rows } = await admin!.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE $1`,
      [`%${fragment}%`],
    );
    if (rows[0]) return;
  }
  throw new Error(`no backend blocked on ${fragment}`);
}

function status(result: ClaimResult): string {
  return result.status === "refused" ? `refused:${result.cap}` : result.status;
}

describe.skipIf(!DATABASE_URL)(`postgres: reservations under real concurrency${skip}`, () => {
  it("20 concurrent claims on 20 pool clients never hold more than the tenant-day limit (5 rounds)", async () => {
    const names = schemas.next();
    const { pool, seen } = watchedPool(names.schema, 24);
    try {
      await migrate(pool, names);
      const execution = new PgExecutionStore(pool, names.schema);
      const limit = 10_000;
      for (let round = 0; round < 5; round++) {
        const day = `2026-01-0${round + 1}`;
        const micros = sizes(20, round + 1, 500, 3_000);
        const results = await Promise.all(
          micros.map((m, i) =>
            execution.claim(
              claimOf(`op-${round}-${i}`, {
                scope: i % 2 === 0 ? SCOPE_A : SCOPE_A2,
                sessionId: `s${i}`,
              }),
              {
                reservation: hold(m, { perTenantDayUsd: limit }, day),
              },
            ),
          ),
        );
        const claimed = micros.filter((_, i) => results[i]?.status === "claimed");
        const held = await heldMicros(names.schema, "org = $1 AND day = $2", ["org-a", day]);
        expect(held).toBe(claimed.reduce((a, b) => a + b, 0));
        expect(held).toBeLessThanOrEqual(limit);
        // What is held only grows in a round: each refused claim would not fit even now (a serial outcome).
        micros.forEach((m, i) => {
          if (results[i]?.status === "refused") expect(held + m).toBeGreaterThan(limit);
          else expect(results[i]?.status).toBe("claimed");
        });
        expect(claimed.length).toBeGreaterThan(0);
      }
      expect(pool.totalCount).toBeGreaterThanOrEqual(20);
      expect(seen.maxInFlight).toBeGreaterThanOrEqual(20);
      expect(seen.errors).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it("two store sets on one database (as two processes) keep both the session and the tenant-day limits", async () => {
    const names = schemas.next();
    const a = await createPostgresStores({
      connectionString: url,
      ...names,
      migrate: true,
      pool: { max: 12 },
    });
    const b = await createPostgresStores({ connectionString: url, ...names, pool: { max: 12 } });
    try {
      const limits = { perSessionUsd: 4_000, perTenantDayUsd: 12_000 };
      for (let round = 0; round < 5; round++) {
        const day = `2026-02-0${round + 1}`;
        const micros = sizes(20, 100 + round, 800, 2_500);
        const claims: ExecutionClaim[] = micros.map((_, i) =>
          claimOf(`op-${round}-${i}`, {
            scope: i % 4 < 2 ? SCOPE_A : SCOPE_A2,
            sessionId: `s${round}-${i % 4}`,
          }),
        );
        const results = await Promise.all(
          claims.map((c, i) =>
            (i % 2 === 0 ? a : b).execution.claim(c, {
              reservation: hold(micros[i] as number, limits, day),
            }),
          ),
        );
        const dayHeld = await heldMicros(names.schema, "org = $1 AND day = $2", ["org-a", day]);
        expect(dayHeld).toBeLessThanOrEqual(limits.perTenantDayUsd);
        const sessionHeld = new Map<string, number>();
        for (const c of claims) {
          const key = `${c.scope.org}/${c.scope.uid} ${c.sessionId}`;
          if (sessionHeld.has(key)) continue;
          const held = await heldMicros(names.schema, "scope = $1 AND session_id = $2", [
            `${c.scope.org}/${c.scope.uid}`,
            c.sessionId,
          ]);
          expect(held).toBeLessThanOrEqual(limits.perSessionUsd);
          sessionHeld.set(key, held);
        }
        results.forEach((r, i) => {
          const c = claims[i] as ExecutionClaim;
          const m = micros[i] as number;
          const session = sessionHeld.get(`${c.scope.org}/${c.scope.uid} ${c.sessionId}`) ?? 0;
          if (status(r) === "refused:perSessionUsd")
            expect(session + m).toBeGreaterThan(limits.perSessionUsd);
          else if (status(r) === "refused:perTenantDayUsd")
            expect(dayHeld + m).toBeGreaterThan(limits.perTenantDayUsd);
          else expect(status(r)).toBe("claimed");
        });
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("50 mixed concurrent claims, settlements and cancellations from two pools: no deadlock, counters exact", async () => {
    const names = schemas.next();
    const one = watchedPool(names.schema, 16);
    const two = watchedPool(names.schema, 16);
    try {
      await migrate(one.pool, names);
      const sets = [one.pool, two.pool].map((pool) => ({
        execution: new PgExecutionStore(pool, names.schema),
        settlements: new PgCostSettlementStore(pool),
      }));
      const limits = { perSessionUsd: 40_000, perTenantDayUsd: 90_000 };
      const scopeOf = (i: number) => (i % 2 === 0 ? SCOPE_A : SCOPE_A2);
      const sessionOf = (i: number) => `s${i % 3}`;
      // 20 calls in flight before the storm (60,000 held): 10 sent and answered (to settle), 10 still prepared (to cancel).
      const toSettle: { operationId: string; scope: typeof SCOPE_A; sessionId: string }[] = [];
      const toCancel: Fence[] = [];
      for (let i = 0; i < 20; i++) {
        const operationId = `pre-${i}`;
        const r = await sets[0]!.execution.claim(
          claimOf(operationId, { scope: scopeOf(i), sessionId: sessionOf(i) }),
          { reservation: hold(3_000, limits) },
        );
        if (r.status !== "claimed") throw new Error(`expected a claim, got ${status(r)}`);
        if (i % 2 === 0) {
          await sets[0]!.execution.dispatch(r.fence, T0 + 1);
          await sets[0]!.execution.receive(
            r.fence,
            { status: "known", usage: { inputTokens: 10, outputTokens: 10 } },
            T0 + 2,
          );
          toSettle.push({ operationId, scope: scopeOf(i), sessionId: sessionOf(i) });
        } else toCancel.push(r.fence);
      }
      const ops: Promise<unknown>[] = [];
      let settleAt = 0;
      let cancelAt = 0;
      for (let i = 0; i < 50; i++) {
        const set = sets[i % 2]!;
        const kind = i % 5;
        if (kind === 1 && settleAt < toSettle.length) {
          const s = toSettle[settleAt++]!;
          ops.push(
            set.settlements.settle(
              settlementOf(`${s.operationId}:settlement`, {
                scope: s.scope,
                sessionId: s.sessionId,
                receipt: { operationId: s.operationId, usdMicros: 1_000 },
              }),
            ),
          );
        } else if (kind === 3 && cancelAt < toCancel.length) {
          ops.push(set.execution.cancelPrepared(toCancel[cancelAt++]!, "aborted", T0 + 3));
        } else {
          ops.push(
            set.execution.claim(
              claimOf(`new-${i}`, {
                scope: scopeOf(i),
                sessionId: sessionOf(i),
                createdAt: T0 + 3,
              }),
              { reservation: hold(3_000, limits) },
            ),
          );
        }
      }
      const outcomes = await Promise.allSettled(ops);
      expect(
        outcomes
          .filter((o) => o.status === "rejected")
          .map((o) => String((o as PromiseRejectedResult).reason)),
      ).toEqual([]);
      expect([settleAt, cancelAt]).toEqual([10, 10]);
      // No deadlock and no serialization failure, not even one the transaction helper retried away.
      expect([...one.seen.errors, ...two.seen.errors]).toEqual([]);
      const claimedNew = outcomes.flatMap((o) =>
        o.status === "fulfilled" && (o.value as ClaimResult).status === "claimed"
          ? [(o.value as { record: ExecutionClaim }).record.operationId]
          : [],
      );
      // Exactly the new claims still hold money; every settled or cancelled call's reservation is gone.
      const { rows } = await admin!.query<{ operation_id: string }>(
        `SELECT operation_id FROM ${names.schema}.spend_reservations ORDER BY operation_id`,
      );
      expect(rows.map((r) => r.operation_id)).toEqual([...claimedNew].sort());
      const tenant = await admin!.query<{ usd_micros: number }>(
        `SELECT usd_micros::int FROM ${names.schema}.spend_tenant_days WHERE org = 'org-a' AND day = $1`,
        [DAY],
      );
      expect(tenant.rows).toEqual([{ usd_micros: 10_000 }]);
      const sessions = await admin!.query<{ total: number }>(
        `SELECT sum(usd_micros)::int AS total FROM ${names.schema}.spend_sessions`,
      );
      expect(sessions.rows).toEqual([{ total: 10_000 }]);
      const held = await heldMicros(names.schema, "org = $1 AND day = $2", ["org-a", DAY]);
      expect(held).toBe(claimedNew.length * 3_000);
      expect(held + 10_000).toBeLessThanOrEqual(limits.perTenantDayUsd);
      expect(Math.max(one.seen.maxInFlight, two.seen.maxInFlight)).toBeGreaterThan(1);
    } finally {
      await Promise.all([one.pool.end(), two.pool.end()]);
    }
  });

  it("a claim reads what is held only after its locks: a reserver that committed while it waited is counted", async () => {
    const names = schemas.next();
    const stores = await createPostgresStores({ connectionString: url, ...names, migrate: true });
    const holder = await admin!.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(
        `SELECT pg_advisory_xact_lock(${lockKey(names.schema, "spend-day", "org-a", DAY)})`,
      );
      const pending = stores.execution.claim(claimOf("op-late", { sessionId: "s2" }), {
        reservation: hold(600, { perTenantDayUsd: 1_000 }),
      });
      await blocked("pg_advisory_xact_lock");
      // Another reserver of the same tenant-day (another session), committing while the claim waits.
      await holder.query(
        `INSERT INTO ${names.schema}.spend_reservations VALUES ('org-a/user-2', 'op-first', 's9', 'org-a', $1, 500, $2)`,
        [DAY, EXPIRES],
      );
      await holder.query("COMMIT");
      expect(status(await pending)).toBe("refused:perTenantDayUsd");
      expect(await stores.execution.get(SCOPE_A, "op-late")).toBeUndefined();
    } finally {
      holder.release();
      await stores.close();
    }
  });

  it("a claim reads its admission after its locks: an admission finished while the claim waited fences it", async () => {
    const names = schemas.next();
    const stores = await createPostgresStores({ connectionString: url, ...names, migrate: true });
    const holder = await admin!.connect();
    try {
      await admitWith(stores.admissions, { admissionId: "adm-1" });
      await holder.query("BEGIN");
      await holder.query(
        `SELECT pg_advisory_xact_lock(${lockKey(names.schema, "spend-day", "org-a", DAY)})`,
      );
      const pending = stores.execution
        .claim(claimOf("op-1"), { admissionId: "adm-1", reservation: hold(1, {}) })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      await blocked("pg_advisory_xact_lock");
      expect((await stores.admissions.finish(SCOPE_A, "adm-1"))?.state).toBe("finished");
      await holder.query("COMMIT");
      expect(await pending).toBeInstanceOf(FenceError);
      expect(await stores.execution.get(SCOPE_A, "op-1")).toBeUndefined();
      expect(await heldMicros(names.schema, "true", [])).toBe(0);
    } finally {
      holder.release();
      await stores.close();
    }
  });

  it("round trips: a fenced, reserving claim is 3 (also when refused and for a retry); a plain claim, a settlement and a cancellation are 1", async () => {
    const names = schemas.next();
    const { pool, seen } = watchedPool(names.schema, 2);
    try {
      await migrate(pool, names);
      const execution = new PgExecutionStore(pool, names.schema);
      const settlements = new PgCostSettlementStore(pool);
      await admitWith(new PgAdmissionStore(pool), { admissionId: "adm-1" });
      const count = async <T>(fn: () => Promise<T>): Promise<[T, number]> => {
        const before = seen.statements;
        const value = await fn();
        return [value, seen.statements - before];
      };
      const limits = { perSessionUsd: 1_000, perTenantDayUsd: 1_000 };
      const [first, claimTrips] = await count(() =>
        execution.claim(claimOf("op-1"), { admissionId: "adm-1", reservation: hold(600, limits) }),
      );
      // BEGIN with the locks; the claim statement and the scope fence's own read (a statement of
      // its own after the admission's FOR SHARE, see fences.ts) in one round trip; COMMIT or ROLLBACK.
      expect([status(first), claimTrips]).toEqual(["claimed", 3]);
      const [refused, refusedTrips] = await count(() =>
        execution.claim(claimOf("op-2"), { admissionId: "adm-1", reservation: hold(600, limits) }),
      );
      expect([status(refused), refusedTrips]).toEqual(["refused:perSessionUsd", 3]);
      const [retry, retryTrips] = await count(() =>
        execution.claim(claimOf("op-1"), { admissionId: "adm-1", reservation: hold(600, limits) }),
      );
      expect([status(retry), retryTrips]).toEqual(["exists", 3]);
      const [plain, plainTrips] = await count(() => execution.claim(claimOf("op-3")));
      expect([status(plain), plainTrips]).toEqual(["claimed", 1]);
      const [, settleTrips] = await count(() =>
        settlements.settle(settlementOf("op-1:settlement", { receipt: { operationId: "op-1" } })),
      );
      expect(settleTrips).toBe(1);
      if (plain.status !== "claimed") throw new Error("expected a fence");
      const [, cancelTrips] = await count(() =>
        execution.cancelPrepared(plain.fence, "aborted", T0 + 1),
      );
      expect(cancelTrips).toBe(1);
      expect(seen.errors).toEqual([]);
    } finally {
      await pool.end();
    }
  });
});
