import {
  type Fence,
  SessionLabelConflictError,
  StoreUnavailableError,
  trailId,
} from "@alma-harness/core";
import {
  admitWith,
  claimOf,
  DAY,
  governedWritesContract,
  SCOPE_A,
  settlementOf,
  storeContracts,
  T0,
  userMsg,
} from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { buildStores, createPostgresStores, type PostgresStores } from "../src/index.js";
import { inline } from "../src/db.js";
import { schemaPool } from "../src/pg.js";
import { DATABASE_URL, hookQueries, pgSuite, type QueryHook } from "./support.js";
import { type Fixture, through, unitOf, unitPerCall } from "./units.js";

const { schemas, url, admin, skip } = pgSuite("grouped");

const open = (commits: "each" | "grouped" = "grouped") =>
  createPostgresStores({
    connectionString: url,
    ...schemas.next(),
    migrate: true,
    pool: { max: 6 },
    commits,
  });

/** Every call in its own unit: lazily begun, committed when the call returns. */
async function unitPerCallFixture(): Promise<Fixture> {
  return unitPerCall(await open());
}

/**
 * Every call of a test inside one long unit (as a turn's calls are): the unit's `work` runs each
 * call it is handed in its own async context, so the calls join its transaction, which commits only
 * at the durability points, and when the fixture closes.
 */
async function oneUnitPerTest(): Promise<Fixture> {
  const stores = await open();
  const jobs: {
    run: () => Promise<unknown>;
    done: (v: unknown) => void;
    fail: (e: unknown) => void;
  }[] = [];
  let wake: (() => void) | undefined;
  let closing = false;
  const ended = unitOf(stores)(async () => {
    for (;;) {
      const job = jobs.shift();
      if (job) {
        job.run().then(job.done, job.fail);
        continue;
      }
      if (closing) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
    }
  });
  ended.catch(() => {});
  // Once closed, calls run alone (the contracts check what a closed store answers).
  const run = <T>(call: () => Promise<T>) =>
    closing
      ? call()
      : new Promise<T>((done, fail) => {
          jobs.push({ run: call, done: done as (v: unknown) => void, fail });
          wake?.();
        });
  let closed = false;
  return through(stores, run, async () => {
    if (closed) return;
    closed = true;
    closing = true;
    wake?.();
    await ended.catch(() => {});
    await stores.close();
  });
}

describe.skipIf(!DATABASE_URL)(`postgres grouped: the contract suites inside units${skip}`, () => {
  storeContracts("postgres grouped (a unit per call)", unitPerCallFixture, {
    describe,
    it,
    expect,
  });
  governedWritesContract("postgres grouped (a unit per call)", unitPerCallFixture, {
    describe,
    it,
    expect,
  });
  storeContracts("postgres grouped (one unit per test)", oneUnitPerTest, { describe, it, expect });
  governedWritesContract("postgres grouped (one unit per test)", oneUnitPerTest, {
    describe,
    it,
    expect,
  });
  // Outside a unit a grouped store set behaves as `each`.
  storeContracts("postgres grouped (no unit)", () => open(), { describe, it, expect });
});

const EXPIRES = T0 + 86_400_000;

type Names = ReturnType<typeof schemas.next>;

const openGrouped = (names: Names) =>
  createPostgresStores({ connectionString: url, ...names, migrate: true, commits: "grouped" });

/** A store set on two schema pools of `names` (`max` main-pool clients), each main-pool statement through `hook`. */
function hookedStores(names: Names, max: number, hook: QueryHook): PostgresStores {
  const main = schemaPool({ connectionString: url, max }, names.schema);
  const root = schemaPool({ connectionString: url, max: 2 }, names.rootSchema);
  hookQueries(main, hook);
  return buildStores(main, root, names, "grouped", () =>
    Promise.all([main.end(), root.end()]).then(() => {}),
  );
}

/** Runs `work` on a grouped store set `a` (by default migrated on fresh schemas) and `other`, a second set on them (another process); closes both. */
async function withGrouped(
  work: (a: PostgresStores, other: PostgresStores, names: Names) => Promise<void>,
  open: (names: Names) => Promise<PostgresStores> = openGrouped,
): Promise<void> {
  const names = schemas.next();
  const a = await open(names);
  const other = await createPostgresStores({ connectionString: url, ...names });
  try {
    await work(a, other, names);
  } finally {
    await Promise.all([a.close(), other.close()]);
  }
}

/** What another store set sees of an admission, and how many audit events. */
const admissionState = async (stores: PostgresStores, admissionId = "adm-1") =>
  (await stores.admissions.get(SCOPE_A, admissionId))?.state;
const auditCount = async (stores: PostgresStores) =>
  (await stores.audit.query(SCOPE_A)).items.length;
const lifecycle = (action: "turn.started" | "model.request", at = T0) =>
  ({
    trail: "lifecycle",
    action,
    scope: SCOPE_A,
    sessionId: trailId("s1"),
    turnId: trailId("turn-1"),
    at,
  }) as const;

describe.skipIf(!DATABASE_URL)(
  `postgres grouped: durable at the durability points, never later${skip}`,
  () => {
    it("a claim is pending until dispatch commits it with everything before it; another connection sees it only then", () =>
      withGrouped((a, other) =>
        unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          const claimed = await a.execution.claim(claimOf("op-1"), {
            admissionId: "adm-1",
            reservation: {
              day: DAY,
              usdMicros: 1000,
              limits: { perTenantDayUsd: 1_000_000 },
              expiresAt: EXPIRES,
            },
          });
          if (claimed.status !== "claimed") throw new Error("expected a claim");
          await a.audit.append(lifecycle("turn.started"));
          // The unit sees its own writes; another connection sees none of them.
          expect(await a.execution.get(SCOPE_A, "op-1")).toBeDefined();
          expect(await other.execution.get(SCOPE_A, "op-1")).toBeUndefined();
          expect(await admissionState(other)).toBeUndefined();
          const before = a.commitCount();
          await a.execution.dispatch(claimed.fence, T0 + 1);
          expect(a.commitCount()).toBe(before + 1);
          expect([
            (await other.execution.get(SCOPE_A, "op-1"))?.state,
            await admissionState(other),
            await auditCount(other),
          ]).toEqual(["dispatching", "active", 1]);
          // A write after the durability point is pending again, until the barrier.
          await a.audit.append(lifecycle("model.request", T0 + 2));
          expect(await auditCount(other)).toBe(1);
          await a.barrier?.commit();
          expect(await auditCount(other)).toBe(2);
        }),
      ));

    it("a row's transitions after the first in one transaction answer at once and go as one late statement: the unit reads them, another connection sees them at the commit, a stale one is refused from what the unit knows", () =>
      withGrouped((a, other) =>
        unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          const claimed = await a.execution.claim(claimOf("op-1"), { admissionId: "adm-1" });
          if (claimed.status !== "claimed") throw new Error("expected a claim");
          await a.execution.dispatch(claimed.fence, T0 + 1);
          const evidence = {
            status: "known",
            usage: { inputTokens: 3, outputTokens: 2, cacheReadTokens: 0 },
          } as const;
          await a.execution.receive(claimed.fence, evidence, T0 + 2);
          const settled = await a.execution.settle(claimed.fence, "set-1", T0 + 3);
          const completed = await a.execution.complete(claimed.fence, T0 + 4);
          expect([settled.state, completed.state, completed.settlementId]).toEqual([
            "settled",
            "completed",
            "set-1",
          ]);
          expect(completed.evidence).toEqual(evidence);
          // Refused from the row the unit holds, as the database would: nothing is lost.
          await expect(a.execution.settle(claimed.fence, "set-2", T0 + 5)).rejects.toThrow(
            "the record is completed, not received",
          );
          // Another connection still sees the dispatch; the unit reads what it wrote.
          expect((await other.execution.get(SCOPE_A, "op-1"))?.state).toBe("dispatching");
          expect(await a.execution.get(SCOPE_A, "op-1")).toEqual(completed);
          await a.barrier?.commit();
          expect(await other.execution.get(SCOPE_A, "op-1")).toEqual(completed);
          // A transition whose transaction commits while it queues (a parallel child's durability
          // point) no longer holds the row: it is written as a plain conditional update instead.
          const again = await a.execution.claim(claimOf("op-2"), { admissionId: "adm-1" });
          if (again.status !== "claimed") throw new Error("expected a claim");
          await a.execution.dispatch(again.fence, T0 + 6);
          await a.execution.receive(again.fence, evidence, T0 + 7);
          // The commit is queued first; the settle reads the held row before it lands.
          const [, raced] = await Promise.all([
            a.barrier?.commit(),
            a.execution.settle(again.fence, "set-3", T0 + 8),
          ]);
          expect(raced.state).toBe("settled");
          expect((await a.execution.complete(again.fence, T0 + 9)).state).toBe("completed");
          await a.barrier?.commit();
          expect((await other.execution.get(SCOPE_A, "op-2"))?.settlementId).toBe("set-3");
          expect((await other.execution.get(SCOPE_A, "op-2"))?.state).toBe("completed");
        }),
      ));

    it("a transaction that read no fence under the tenant's fence lock does not read it again; a fence set meanwhile waits for the commit, and the next transaction reads it", () => {
      const texts: string[] = [];
      return withGrouped(
        (a, other) =>
          unitOf(a)(async () => {
            await admitWith(a.admissions, { admissionId: "adm-1" });
            const fenceReads = () => texts.filter((t) => t.includes("scope_fences")).length;
            const before = fenceReads();
            const first = await a.execution.claim(claimOf("op-1"), { admissionId: "adm-1" });
            expect(first.status).toBe("claimed");
            // The admission's insert read it under the lock the claim still holds: no read now.
            expect(fenceReads()).toBe(before);
            // A fence set by another process waits for the unit's commit (the lock, exclusive).
            let fenced = false;
            const fencing = other.admissions
              .fenceScope({ target: { org: SCOPE_A.org }, reason: "operator", now: T0 + 1 })
              .then(() => {
                fenced = true;
              });
            await new Promise((resolve) => setTimeout(resolve, 300));
            expect(fenced).toBe(false);
            const second = await a.execution.claim(claimOf("op-2"), { admissionId: "adm-1" });
            expect(second.status).toBe("claimed");
            await a.barrier?.commit();
            await fencing;
            // The next transaction has no lock and no knowledge: it reads the fence and is refused.
            await expect(
              a.execution.claim(claimOf("op-3"), { admissionId: "adm-1" }),
            ).rejects.toThrow();
            expect(fenceReads()).toBeGreaterThan(before);
          }),
        async (names) => {
          await (
            await createPostgresStores({ connectionString: url, ...names, migrate: true })
          ).close();
          return hookedStores(names, 4, (args, query) => {
            if (typeof args[0] === "string") texts.push(args[0]);
            return query(...args);
          });
        },
      );
    });

    it("a refused write inside a unit rolls back alone: the writes before and after it commit", () =>
      withGrouped(async (a, other) => {
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await a.sessions.append(SCOPE_A, "s1", [userMsg("one")], {
            admissionId: "adm-1",
            now: T0 + 1,
          });
          // A FenceError (no such admission), a refused reservation, a SQL error: each rolls back alone.
          await expect(
            a.sessions.append(SCOPE_A, "s1", [userMsg("x")], {
              admissionId: "adm-missing",
              now: T0 + 2,
            }),
          ).rejects.toThrow();
          const refused = await a.execution.claim(claimOf("op-big"), {
            reservation: {
              day: DAY,
              usdMicros: 5_000_000,
              limits: { perTenantDayUsd: 1_000 },
              expiresAt: EXPIRES,
            },
          });
          expect(refused.status).toBe("refused");
          await a.labels.put(SCOPE_A, "s1", { patient: "p-1" });
          await expect(a.labels.put(SCOPE_A, "s1", { patient: "p-2" })).rejects.toBeInstanceOf(
            SessionLabelConflictError,
          );
          await a.sessions.append(SCOPE_A, "s1", [userMsg("two")], {
            admissionId: "adm-1",
            now: T0 + 3,
          });
        });
        expect((await other.sessions.load(SCOPE_A, "s1")).messages).toHaveLength(2);
        expect(await admissionState(other)).toBe("active");
        expect(await other.execution.get(SCOPE_A, "op-big")).toBeUndefined();
        expect(await other.labels.get(SCOPE_A, "s1")).toEqual({ patient: "p-1" });
      }));

    it("a statement that fails in the database inside a unit rolls back alone too", () =>
      withGrouped(async (a, other, names) => {
        // A reserving claim whose tenant-day sum would overflow int8 fails in the database (22003).
        await admin!.query(
          `INSERT INTO ${names.schema}.spend_tenant_days (org, day, usd_micros) VALUES ('org-a', $1, 9223372036854775000)`,
          [DAY],
        );
        await admin!.query(
          `INSERT INTO ${names.schema}.spend_reservations (scope, operation_id, session_id, org, day, usd_micros, expires_at) VALUES ($1, 'op-held', 's9', 'org-a', $2, 10000, $3)`,
          [`${SCOPE_A.org}/${SCOPE_A.uid}`, DAY, EXPIRES],
        );
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await expect(
            a.execution.claim(claimOf("op-1"), {
              reservation: {
                day: DAY,
                usdMicros: 1000,
                limits: { perTenantDayUsd: 1_000_000 },
                expiresAt: EXPIRES,
              },
            }),
          ).rejects.toBeInstanceOf(StoreUnavailableError);
          await a.audit.append(lifecycle("model.request"));
        });
        expect([await admissionState(other), await auditCount(other)]).toEqual(["active", 1]);
        expect(await other.execution.get(SCOPE_A, "op-1")).toBeUndefined();
      }));

    it("a write that takes nothing back by itself (no savepoint, issue 26) and fails in the database loses the unit: its writes since the last commit are gone and its later calls are refused", () =>
      withGrouped(async (a, other, names) => {
        // A trigger makes the settlement's insert fail in the database (P0001), after the unit wrote.
        await admin!.query(
          `CREATE FUNCTION ${names.schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
           CREATE TRIGGER refuse BEFORE INSERT ON ${names.schema}.settlements FOR EACH ROW EXECUTE FUNCTION ${names.schema}.refuse()`,
        );
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await a.audit.append(lifecycle("model.request"));
          await expect(a.settlements.settle(settlementOf("set-1"))).rejects.toBeInstanceOf(
            StoreUnavailableError,
          );
          await expect(a.audit.append(lifecycle("model.request", T0 + 1))).rejects.toBeInstanceOf(
            StoreUnavailableError,
          );
        }).catch((error: unknown) => expect(error).toBeInstanceOf(StoreUnavailableError));
        expect([await admissionState(other), await auditCount(other)]).toEqual([undefined, 0]);
        // A later unit of the same store set starts afresh.
        await unitOf(a)(() => a.audit.append(lifecycle("model.request", T0 + 2)));
        expect(await auditCount(other)).toBe(1);
      }));

    it("a settlement's counters wait in a unit for its commit: another session's settlement of the tenant-day is not held up meanwhile, and a counter that fails there fails the commit and loses the unit's writes", () =>
      withGrouped(async (a, other, names) => {
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await a.settlements.settle(settlementOf("set-1", { receipt: { usdMicros: 1_000 } }));
          // The unit holds no lock of the tenant-day yet: another process settles at once.
          const theirs = await Promise.race([
            other.settlements
              .settle(settlementOf("set-2", { sessionId: "s2", receipt: { usdMicros: 500 } }))
              .then(() => "settled"),
            new Promise((resolve) => setTimeout(() => resolve("held up"), 10_000)),
          ]);
          expect(theirs).toBe("settled");
          // The unit reads its own counters (the read takes them first); the other sees its own only.
          expect((await a.spend.tenantDays("org-a")).map((d) => d.usdMicros)).toEqual([1_500]);
          expect((await other.spend.tenantDays("org-a")).map((d) => d.usdMicros)).toEqual([500]);
        });
        expect((await other.spend.tenantDays("org-a")).map((d) => d.usdMicros)).toEqual([1_500]);
        // A counter that overflows int8 fails when it goes, at the commit: nothing of the unit lands.
        await admin!.query(
          `UPDATE ${names.schema}.spend_tenant_days SET usd_micros = 9223372036854775000 WHERE org = 'org-a'`,
        );
        await expect(
          unitOf(a)(async () => {
            await a.audit.append(lifecycle("model.request"));
            await a.settlements.settle(settlementOf("set-3", { receipt: { usdMicros: 10_000 } }));
          }),
        ).rejects.toBeInstanceOf(StoreUnavailableError);
        expect(await other.settlements.get(SCOPE_A, "set-3")).toBeUndefined();
        expect(await auditCount(other)).toBe(0);
      }));

    it("the end of work commits what is pending, either way; the barrier is a no-op with nothing pending or outside a unit", () =>
      withGrouped(async (a, other) => {
        const count = a.commitCount();
        await a.barrier?.commit();
        await unitOf(a)(async () => {
          await a.barrier?.commit();
        });
        expect(a.commitCount()).toBe(count);
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await a.audit.append(lifecycle("turn.started"));
          expect(await admissionState(other)).toBeUndefined();
        });
        expect(a.commitCount()).toBe(count + 1);
        expect(await admissionState(other)).toBe("active");
        await expect(
          unitOf(a)(async () => {
            await a.audit.append(lifecycle("model.request", T0 + 1));
            throw new Error("the turn failed");
          }),
        ).rejects.toThrow("the turn failed");
        expect(await auditCount(other)).toBe(2);
        // No transaction stays open: the pool has no client checked out.
        const { rows } = await admin!.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
        );
        expect(rows[0]?.n).toBe(0);
      }));

    it("a failed COMMIT loses the unit's pending writes and refuses every later write and commit of that unit", async () => {
      let failCommit = false;
      const failing = async (names: Names) => {
        await (
          await createPostgresStores({ connectionString: url, ...names, migrate: true })
        ).close();
        return hookedStores(names, 4, (args, query) =>
          failCommit && args[0] === "COMMIT"
            ? Promise.reject(new Error("the server went away during COMMIT"))
            : query(...args),
        );
      };
      await withGrouped(async (a, other) => {
        const outcome = unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          failCommit = true;
          await expect(a.barrier?.commit()).rejects.toBeInstanceOf(StoreUnavailableError);
          failCommit = false;
          await expect(a.audit.append(lifecycle("model.request"))).rejects.toBeInstanceOf(
            StoreUnavailableError,
          );
          await expect(a.barrier?.commit()).rejects.toBeInstanceOf(StoreUnavailableError);
          return "returned";
        });
        // The end of work commits too, and reports the loss.
        await expect(outcome).rejects.toBeInstanceOf(StoreUnavailableError);
        expect([await admissionState(other), await auditCount(other)]).toEqual([undefined, 0]);
        // Another unit starts clean.
        await unitOf(a)(() => admitWith(a.admissions, { admissionId: "adm-2" }));
        expect(await admissionState(other, "adm-2")).toBe("active");
      }, failing);
    });

    it("trail records in an open unit ride with its next statement as one multi-row insert, in order", () =>
      withGrouped(async (a, other) => {
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          const before = a.roundTripCount();
          for (let i = 0; i < 5; i++) await a.audit.append(lifecycle("model.request", T0 + i));
          // Nothing sent yet: the five rows wait for the unit's next statement.
          expect(a.roundTripCount()).toBe(before);
          // A read in the unit sees them (they go first, in one insert).
          expect(await auditCount(a)).toBe(5);
          expect(await auditCount(other)).toBe(0);
          await a.audit.append(lifecycle("turn.started", T0 + 9));
          const beforeCommit = a.roundTripCount();
          await a.barrier?.commit();
          // The last row and the COMMIT share one round trip.
          expect(a.roundTripCount()).toBe(beforeCommit + 1);
        });
        const items = (await other.audit.query(SCOPE_A, { limit: 10 })).items;
        expect(items.map((r) => (r as { at: number }).at)).toEqual(
          [0, 1, 2, 3, 4, 9].map((n) => T0 + n),
        );
      }));

    it("a waiting trail batch the database refuses loses the unit's writes since the last commit, and the unit refuses the rest", async () => {
      let refuse = false;
      const failing = async (names: Names) => {
        await (
          await createPostgresStores({ connectionString: url, ...names, migrate: true })
        ).close();
        return hookedStores(names, 4, (args, query) =>
          refuse && String(args[0]).includes("unnest")
            ? Promise.reject(new Error("the server refused the batch"))
            : query(...args),
        );
      };
      await withGrouped(async (a, other) => {
        const outcome = unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          await a.audit.append(lifecycle("turn.started"));
          refuse = true;
          await expect(a.barrier?.commit()).rejects.toBeInstanceOf(StoreUnavailableError);
          refuse = false;
          await expect(a.audit.append(lifecycle("model.request"))).rejects.toBeInstanceOf(
            StoreUnavailableError,
          );
        });
        await expect(outcome).rejects.toBeInstanceOf(StoreUnavailableError);
        expect([await admissionState(other), await auditCount(other)]).toEqual([undefined, 0]);
      }, failing);
    });

    it("concurrent writes of one unit (a turn's parallel tool children) are serialized on its client", () =>
      withGrouped(async (a, other) => {
        await unitOf(a)(async () => {
          await admitWith(a.admissions, { admissionId: "adm-1" });
          const results = await Promise.allSettled(
            Array.from({ length: 20 }, (_, i) =>
              i % 5 === 4
                ? a.sessions.append(SCOPE_A, "s1", [userMsg(`bad ${i}`)], {
                    admissionId: "adm-missing",
                    now: T0 + i,
                  })
                : a.audit.append({
                    trail: "lifecycle",
                    action: "tool.result",
                    scope: SCOPE_A,
                    sessionId: trailId("s1"),
                    turnId: trailId("turn-1"),
                    at: T0 + i,
                  }),
            ),
          );
          expect(results.filter((r) => r.status === "rejected")).toHaveLength(4);
        });
        expect((await other.audit.query(SCOPE_A, { limit: 100 })).items).toHaveLength(16);
      }));
  },
);

describe.skipIf(!DATABASE_URL)(
  `postgres grouped: a write's first statement rides with its savepoint${skip}`,
  () => {
    it("inlined literals read back exactly what the parameters would", async () => {
      const tricky = [
        "plain",
        "it's",
        "back\\slash \\' both",
        'dq " and $1 and $$ and ;',
        "ünïcödé ✓",
        "",
        "E'x'",
        "-- comment",
        "\n\t",
      ];
      const values: unknown[] = [
        ...tricky,
        0,
        -5,
        Number.MAX_SAFE_INTEGER,
        true,
        false,
        null,
        [...tricky, null],
        [],
      ];
      const text = `SELECT ${values.map((v, i) => (Array.isArray(v) ? `$${i + 1}::text[]` : typeof v === "number" ? `$${i + 1}::int8` : typeof v === "boolean" ? `$${i + 1}::bool` : `$${i + 1}::text`)).join(", ")}`;
      const sql = inline(text, values);
      if (sql === undefined) throw new Error("expected an inlined statement");
      const byParams = await admin!.query({ text, values, rowMode: "array" });
      const byLiterals = await admin!.query({ text: sql, rowMode: "array" });
      expect(byLiterals.rows).toEqual(byParams.rows);
      expect(inline("SELECT $1", [1.5])).toBeUndefined();
      expect(inline("SELECT $1", [{ a: 1 }])).toBeUndefined();
      expect(inline("SELECT $1, $2", ["a"])).toBeUndefined();
    });
  },
);

describe.skipIf(!DATABASE_URL)(`postgres grouped: turns under real concurrency${skip}`, () => {
  it("64 concurrent turn-shaped units from 2 store sets: no deadlock or serialization error, counters exact", async () => {
    const names = schemas.next();
    await (await createPostgresStores({ connectionString: url, ...names, migrate: true })).close();
    const errors: string[] = [];
    const recording: QueryHook = (args, query) => {
      const out = query(...args);
      if (out instanceof Promise)
        out.catch((e: { code?: string }) => errors.push(e.code ?? String(e)));
      return out;
    };
    const [one, two] = [hookedStores(names, 8, recording), hookedStores(names, 8, recording)];
    try {
      const price = (i: number) => 100 + (i % 7) * 10;
      const outcomes = await Promise.all(
        Array.from({ length: 64 }, (_, i) => {
          const s = i % 2 === 0 ? one : two;
          const sessionId = `s${i % 16}-${i}`;
          return unitOf(s)(async () => {
            const admitted = await admitWith(s.admissions, { admissionId: `adm-${i}`, sessionId });
            if (admitted.status !== "admitted") throw new Error("expected an admission");
            const claimed = await s.execution.claim(claimOf(`op-${i}`, { sessionId }), {
              admissionId: `adm-${i}`,
              reservation: {
                day: DAY,
                usdMicros: 1_000,
                limits: { perTenantDayUsd: 100_000_000, perSessionUsd: 10_000 },
                expiresAt: EXPIRES,
              },
            });
            if (claimed.status !== "claimed")
              throw new Error(`expected a claim, got ${claimed.status}`);
            const fence: Fence = claimed.fence;
            await s.execution.dispatch(fence, T0 + 1);
            await s.execution.receive(
              fence,
              { status: "known", usage: { inputTokens: 1, outputTokens: 1, cacheReadTokens: 0 } },
              T0 + 2,
            );
            await s.settlements.settle(
              settlementOf(`set-${i}`, {
                sessionId,
                receipt: { operationId: `op-${i}`, turnId: `turn-${i}`, usdMicros: price(i) },
              }),
            );
            await s.execution.settle(fence, `set-${i}`, T0 + 3);
            await s.audit.append({
              trail: "lifecycle",
              action: "model.response",
              scope: SCOPE_A,
              sessionId: trailId(sessionId),
              turnId: trailId(`turn-${i}`),
              at: T0 + 3,
            });
            await s.sessions.append(SCOPE_A, sessionId, [userMsg(`turn ${i}`)], {
              admissionId: `adm-${i}`,
              now: T0 + 4,
            });
            await s.admissions.finish(SCOPE_A, `adm-${i}`);
            return i;
          });
        }),
      );
      expect(outcomes).toHaveLength(64);
      const total = Array.from({ length: 64 }, (_, i) => price(i)).reduce((a, b) => a + b, 0);
      expect(await one.spend.tenantDays("org-a")).toEqual([{ day: DAY, usdMicros: total }]);
      const held = await admin!.query(
        `SELECT count(*)::int AS n FROM ${names.schema}.spend_reservations`,
      );
      expect(held.rows[0]?.n).toBe(0);
      const finished = await admin!.query(
        `SELECT count(*)::int AS n FROM ${names.schema}.admissions WHERE state = 'finished'`,
      );
      expect(finished.rows[0]?.n).toBe(64);
      expect(errors).toEqual([]);
      // Two commits a unit (dispatch, finish): nothing retried, nothing left for the end of work.
      expect(one.commitCount() + two.commitCount()).toBe(128);
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});
