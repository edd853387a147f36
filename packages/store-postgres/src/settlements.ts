import type {
  CostSettlementStore,
  Scope,
  SettlementInput,
  SettlementRecord,
  SpendStore,
} from "@alma-harness/core";
import {
  appliedSettlement,
  prepareAcknowledge,
  prepareKeyed,
  preparePeek,
  preparePending,
  prepareSettle,
  prepareSettlementList,
  prepareTenantDays,
  RECORD_VERSION,
  replayedSettlement,
  type SettlementRow,
  settlementOf,
  settlementPage,
  settlementsOf,
  spendView,
  type TenantDayRow,
  tenantDaysOf,
} from "@alma-harness/core/stores";
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { spendLocks } from "./pg.js";

/** The receipt's insert-or-nothing (`ins`) and, only when it inserted, its obligations. */
const RECEIPT_ROWS = `WITH ins AS (
    INSERT INTO settlements (scope, settlement_id, session_id, turn_id, at, v, record) VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (scope, settlement_id) DO NOTHING RETURNING 1
  ), obligations AS (
    INSERT INTO settlement_obligations (scope, settlement_id, consumer) SELECT $1, $2, c FROM ins, unnest($8::text[]) AS c
  )`;

/**
 * The whole settlement as one statement (its own transaction): the receipt's insert-or-nothing,
 * then, only when it inserted, its obligations, the tenant-day counter, the session counter (in
 * that order: the session upsert reads the tenant-day's output, so its row lock is always taken
 * second, the order a reserving claim takes its locks in) and the deletion of the reservation the
 * call held. `$9` is the receipt's operation id.
 */
const SETTLE = `${RECEIPT_ROWS}, tenant_day AS (
    INSERT INTO spend_tenant_days (org, day, usd_micros) SELECT $10, $11, $12 FROM ins
    ON CONFLICT (org, day) DO UPDATE SET usd_micros = spend_tenant_days.usd_micros + EXCLUDED.usd_micros RETURNING 1
  ), session AS (
    INSERT INTO spend_sessions (scope, session_id, usd_micros) SELECT $1, $3, $12 FROM tenant_day
    ON CONFLICT (scope, session_id) DO UPDATE SET usd_micros = spend_sessions.usd_micros + EXCLUDED.usd_micros RETURNING 1
  ), released AS (
    DELETE FROM spend_reservations WHERE scope = $1 AND operation_id = $9 AND EXISTS (SELECT 1 FROM session)
  )
  SELECT count(*)::int AS applied FROM ins`;

/**
 * In a unit, the settlement in two parts (issue 26: locks as narrow as the rule). Now: the receipt's
 * insert-or-nothing, its obligations and the release of the call's reservation, which lock only the
 * call's own rows. Later (a late statement: with the unit's commit, next read, reserving claim or
 * durable write): the two counters under the reservation
 * locks (`COUNTERS`), so the tenant-day's row and lock are held from then to the commit, never
 * across what the turn does meanwhile (a pure tool's handler runs in the same transaction).
 */
const RECEIPT = `${RECEIPT_ROWS}, released AS (
    DELETE FROM spend_reservations WHERE scope = $1 AND operation_id = $9 AND EXISTS (SELECT 1 FROM ins)
  )
  SELECT count(*)::int AS applied FROM ins`;

/** A settled receipt's two counters, tenant-day first (see `RECEIPT`): `$1` org, `$2` day, `$3` micros, `$4` scope, `$5` session. */
const COUNTERS = `WITH tenant_day AS (
    INSERT INTO spend_tenant_days (org, day, usd_micros) VALUES ($1, $2, $3)
    ON CONFLICT (org, day) DO UPDATE SET usd_micros = spend_tenant_days.usd_micros + EXCLUDED.usd_micros RETURNING 1
  )
  INSERT INTO spend_sessions (scope, session_id, usd_micros) SELECT $4, $5, $3 FROM tenant_day
  ON CONFLICT (scope, session_id) DO UPDATE SET usd_micros = spend_sessions.usd_micros + EXCLUDED.usd_micros`;

/**
 * Settlements in PostgreSQL: the receipt's insert-or-nothing, its obligations, both counter
 * increments and the release of the call's reservation commit together, in one statement. A
 * concurrent equal settle waits on the first insert and then reads it as a replay; counters are
 * incremented in place (`usd_micros + n`), never read and rewritten.
 */
export class PgCostSettlementStore implements CostSettlementStore {
  readonly #db: Conn;
  readonly #schema: string | undefined;

  /** `schema` namespaces the reservation lock keys a settlement takes inside a unit (as the execution store's). */
  constructor(pool: pg.Pool | Conn, schema?: string) {
    this.#db = asConn(pool);
    this.#schema = schema;
  }

  async settle(input: SettlementInput): Promise<SettlementRecord> {
    const { s, key, text, id } = prepareSettle(input);
    const values = [
      key,
      id,
      s.sessionId,
      s.receipt.turnId,
      s.at,
      RECORD_VERSION,
      text,
      [...s.consumers],
      s.receipt.operationId,
      s.scope.org,
      s.day,
      s.receipt.usdMicros,
    ];
    // Alone, the one statement holds its row locks only while it runs, and needs no other lock.
    // In a unit (the turn's transaction) the counters wait for its next statement (see `RECEIPT`).
    const split = this.#schema !== undefined && this.#db.inUnit();
    const { rows } = await this.#db.write<{ applied: number }>(
      split ? RECEIPT : SETTLE,
      split ? values.slice(0, 9) : values,
      { retry: true },
    );
    if (rows[0]?.applied === 1) {
      if (split)
        await this.#db.later(
          COUNTERS,
          [s.scope.org, s.day, s.receipt.usdMicros, key, s.sessionId],
          spendLocks(this.#schema as string, s.scope.org, s.day, key, s.sessionId),
        );
      return appliedSettlement(s);
    }
    // Already there (committed before this statement, or by the concurrent settle it waited on): a new snapshot reads it.
    const existing = (
      await this.#db.query<SettlementRow>(
        "SELECT v, record FROM settlements WHERE scope = $1 AND settlement_id = $2",
        [key, id],
      )
    ).rows[0];
    return replayedSettlement(existing, text, id);
  }

  async get(scope: Scope, settlementId: string): Promise<SettlementRecord | undefined> {
    const { key, id } = prepareKeyed(scope, "settlementId", settlementId);
    return settlementOf(
      (
        await this.#db.query<SettlementRow>(
          "SELECT v, record FROM settlements WHERE scope = $1 AND settlement_id = $2",
          [key, id],
        )
      ).rows[0],
    );
  }

  async list(
    scope: Scope,
    opts: {
      readonly sessionId?: string;
      readonly turnId?: string;
      readonly cursor?: string;
      readonly limit?: number;
    } = {},
  ): Promise<{ readonly items: readonly SettlementRecord[]; readonly nextCursor?: string }> {
    const { key, sessionId, turnId, limit, after } = prepareSettlementList(scope, opts);
    const { rows } = await this.#db.query<SettlementRow>(
      `SELECT v, record FROM settlements WHERE scope = $1 AND ($2::text IS NULL OR session_id = $2) AND ($3::text IS NULL OR turn_id = $3)
       AND (at, settlement_id) > ($4, $5) ORDER BY at, settlement_id LIMIT $6`,
      [key, sessionId, turnId, after[0], after[1], limit + 1],
    );
    return settlementPage(rows, limit);
  }

  async pending(
    scope: Scope,
    consumer: string,
    limit?: number,
  ): Promise<readonly SettlementRecord[]> {
    const { key, consumer: c, max } = preparePending(scope, consumer, limit);
    const { rows } = await this.#db.query<SettlementRow>(
      `SELECT s.v, s.record FROM settlement_obligations o JOIN settlements s ON s.scope = o.scope AND s.settlement_id = o.settlement_id
       WHERE o.scope = $1 AND o.consumer = $2 AND NOT o.acknowledged ORDER BY s.at, s.settlement_id LIMIT $3`,
      [key, c, max],
    );
    return settlementsOf(rows);
  }

  async acknowledge(scope: Scope, consumer: string, settlementId: string): Promise<void> {
    const { key, consumer: c, id } = prepareAcknowledge(scope, consumer, settlementId);
    await this.#db.write(
      "UPDATE settlement_obligations SET acknowledged = true WHERE scope = $1 AND consumer = $2 AND settlement_id = $3",
      [key, c, id],
    );
  }
}

/** Spend counters in PostgreSQL, shared by every host process; they move only inside settlement. */
export class PgSpendStore implements SpendStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async peek(
    scope: Scope,
    sessionId: string,
    day: string,
  ): Promise<{ readonly sessionMicros: number; readonly tenantDayMicros: number }> {
    const { key, org, id, day: d } = preparePeek(scope, sessionId, day);
    const { rows } = await this.#db.query<{ session: number | null; tenant: number | null }>(
      `SELECT (SELECT usd_micros FROM spend_sessions WHERE scope = $1 AND session_id = $2) AS session,
              (SELECT usd_micros FROM spend_tenant_days WHERE org = $3 AND day = $4) AS tenant`,
      [key, id, org, d],
    );
    return spendView(rows[0]?.session, rows[0]?.tenant);
  }

  async tenantDays(
    org: string,
    opts: { readonly from?: string; readonly to?: string } = {},
  ): Promise<readonly { readonly day: string; readonly usdMicros: number }[]> {
    const { org: tenant, from, to } = prepareTenantDays(org, opts);
    const { rows } = await this.#db.query<TenantDayRow>(
      "SELECT day, usd_micros FROM spend_tenant_days WHERE org = $1 AND day >= $2 AND day <= $3 ORDER BY day",
      [tenant, from, to],
    );
    return tenantDaysOf(rows);
  }
}
