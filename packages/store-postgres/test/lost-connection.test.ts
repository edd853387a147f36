import { StoreUnavailableError } from "@alma-harness/core";
import { admitWith, DAY, SCOPE_A, settlementOf, T0, userMsg } from "@alma-harness/testing";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createPostgresStores, type PostgresStores } from "../src/index.js";
import { DATABASE_URL, SKIP_REASON, schemaFactory } from "./support.js";

const schemas = schemaFactory("lost");
afterAll(() => schemas.dropAll());

/**
 * Waits (by polling the server, never a timer) until a backend is blocked on a lock while running
 * a statement matching `fragment`, and returns its pid. It polls from its own connection: inside
 * the lock holder's transaction, pg_stat_activity would be one frozen snapshot.
 */
async function blockedBackend(watcher: pg.Pool, schema: string, fragment: string): Promise<number> {
  for (let i = 0; i < 5000; i++) {
    // The stores name their tables with the schema: the fragment is matched without it.
    const { rows } = await watcher.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
       AND wait_event_type = 'Lock' AND replace(query, $2 || '.', '') LIKE $1`,
      [`%${fragment}%`, schema],
    );
    if (rows[0]) return rows[0].pid;
  }
  throw new Error(`no backend blocked on ${fragment}`);
}

interface Harness {
  readonly stores: PostgresStores;
  /** A connection of its own, to hold locks in an open transaction. */
  readonly admin: pg.PoolClient;
  /** Blocks until a store statement matching `fragment` waits on a lock held by `admin`; returns its pid. */
  blocked(fragment: string): Promise<number>;
}

async function withStores(body: (h: Harness) => Promise<void>): Promise<void> {
  const names = schemas.next();
  const stores = await createPostgresStores({
    connectionString: DATABASE_URL,
    ...names,
    migrate: true,
  });
  const pool = new pg.Pool({
    connectionString: DATABASE_URL,
    max: 2,
    options: `-c search_path=${names.schema}`,
  });
  pool.on("error", () => {});
  const admin = await pool.connect();
  try {
    await body({
      stores,
      admin,
      blocked: (fragment) => blockedBackend(pool, names.schema, fragment),
    });
  } finally {
    admin.release();
    await pool.end();
    await stores.close();
  }
}

describe.skipIf(!DATABASE_URL)(
  `postgres: a connection lost mid-transaction leaves nothing half-written${DATABASE_URL ? "" : ` (${SKIP_REASON})`}`,
  () => {
    it("a settlement killed after its receipt insert moves no counter and leaves no receipt or obligation", async () => {
      await withStores(async ({ stores, admin, blocked }) => {
        await stores.settlements.settle(settlementOf("st-1"));
        await admin.query("BEGIN");
        await admin.query("SELECT * FROM spend_tenant_days WHERE org = 'org-a' FOR UPDATE");
        // Settle the outcome at once: the kill can reject it before the assertion is reached.
        const settling = stores.settlements.settle(settlementOf("st-2")).then(
          () => undefined,
          (error: unknown) => error,
        );
        const pid = await blocked("spend_tenant_days");
        await admin.query("SELECT pg_terminate_backend($1)", [pid]);
        expect(await settling).toBeInstanceOf(StoreUnavailableError);
        await admin.query("ROLLBACK");
        expect(await stores.settlements.get(SCOPE_A, "st-2")).toBeUndefined();
        expect(await stores.settlements.pending(SCOPE_A, "ledger")).toHaveLength(1);
        expect(await stores.spend.peek(SCOPE_A, "s1", DAY)).toEqual({
          sessionMicros: 1_500,
          tenantDayMicros: 1_500,
        });
        expect((await stores.settlements.settle(settlementOf("st-2"))).status).toBe("applied");
        expect(await stores.spend.peek(SCOPE_A, "s1", DAY)).toEqual({
          sessionMicros: 3_000,
          tenantDayMicros: 3_000,
        });
      });
    });

    it("an append killed after creating its session row leaves no session, no message, and the admission free to end", async () => {
      await withStores(async ({ stores, admin, blocked }) => {
        await admitWith(stores.admissions, { admissionId: "a1" });
        await admin.query("BEGIN");
        await admin.query(
          "INSERT INTO messages (scope, session_id, position, event_id, v, body) VALUES ('org-a/user-1', 's1', 0, NULL, 1, '{}')",
        );
        // Settle the outcome at once: the kill can reject it before the assertion is reached.
        const appending = stores.sessions
          .append(SCOPE_A, "s1", [userMsg("hello", "e1")], { admissionId: "a1", now: T0 + 1 })
          .then(
            () => undefined,
            (error: unknown) => error,
          );
        const pid = await blocked("INSERT INTO messages");
        await admin.query("SELECT pg_terminate_backend($1)", [pid]);
        expect(await appending).toBeInstanceOf(StoreUnavailableError);
        await admin.query("ROLLBACK");
        expect(await stores.sessions.load(SCOPE_A, "s1")).toEqual({
          messages: [],
          revision: 0,
          offset: 0,
          erased: false,
        });
        expect((await stores.sessions.list(SCOPE_A)).items).toEqual([]);
        expect(await stores.sessions.findEvents(SCOPE_A, "s1", ["e1"])).toEqual([]);
        expect((await stores.admissions.markUncertain(SCOPE_A, "a1"))?.state).toBe("uncertain");
      });
    });

    it("a claim's conditional update killed while waiting writes nothing; the fence still works after", async () => {
      await withStores(async ({ stores, admin, blocked }) => {
        const claim = await stores.execution.claim({
          scope: SCOPE_A,
          operationId: "op-1",
          sessionId: "s1",
          rootKey: "r",
          turnId: "t",
          kind: "main",
          clientId: "c",
          model: "m",
          priceVersion: "p",
          policyVersion: "q",
          createdAt: T0,
          deadlineAt: T0 + 1000,
        });
        if (claim.status !== "claimed") throw new Error("expected a fence");
        await admin.query("BEGIN");
        await admin.query("SELECT * FROM execution WHERE operation_id = 'op-1' FOR UPDATE");
        // Settle the outcome at once: the kill can reject it before the assertion is reached.
        const dispatching = stores.execution.dispatch(claim.fence, T0 + 1).then(
          () => undefined,
          (error: unknown) => error,
        );
        const pid = await blocked("UPDATE execution");
        await admin.query("SELECT pg_terminate_backend($1)", [pid]);
        expect(await dispatching).toBeInstanceOf(StoreUnavailableError);
        await admin.query("ROLLBACK");
        expect((await stores.execution.get(SCOPE_A, "op-1"))?.state).toBe("prepared");
        expect((await stores.execution.dispatch(claim.fence, T0 + 2)).state).toBe("dispatching");
      });
    });
  },
);
