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
import type { SqliteDb } from "./db.js";
import { release } from "./spend.js";

/** Settlements in SQLite: the receipt, its obligations and both spend counters commit in one immediate transaction. */
export class SqliteCostSettlementStore implements CostSettlementStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async settle(input: SettlementInput): Promise<SettlementRecord> {
    const { s, key, text, id } = prepareSettle(input);
    return this.#db.write(() => {
      const existing = this.#db
        .stmt("SELECT v, record FROM settlements WHERE scope = ? AND settlement_id = ?")
        .get(key, id) as SettlementRow | undefined;
      if (existing) return replayedSettlement(existing, text, id);
      this.#db
        .stmt(
          "INSERT INTO settlements (scope, settlement_id, session_id, turn_id, at, v, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .run(key, id, s.sessionId, s.receipt.turnId, s.at, RECORD_VERSION, text);
      const owe = this.#db.stmt(
        "INSERT INTO settlement_obligations (scope, settlement_id, consumer) VALUES (?, ?, ?)",
      );
      for (const consumer of s.consumers) owe.run(key, id, consumer);
      // The call's reservation ends in the transaction that counts its actual price.
      release(this.#db, key, s.receipt.operationId);
      const micros = s.receipt.usdMicros;
      this.#db
        .stmt(
          `INSERT INTO spend_sessions (scope, session_id, usd_micros) VALUES (?, ?, ?)
           ON CONFLICT (scope, session_id) DO UPDATE SET usd_micros = usd_micros + excluded.usd_micros`,
        )
        .run(key, s.sessionId, micros);
      this.#db
        .stmt(
          `INSERT INTO spend_tenant_days (org, day, usd_micros) VALUES (?, ?, ?)
           ON CONFLICT (org, day) DO UPDATE SET usd_micros = usd_micros + excluded.usd_micros`,
        )
        .run(s.scope.org, s.day, micros);
      return appliedSettlement(s);
    });
  }

  async get(scope: Scope, settlementId: string): Promise<SettlementRecord | undefined> {
    const { key, id } = prepareKeyed(scope, "settlementId", settlementId);
    return settlementOf(
      this.#db.guard(
        () =>
          this.#db
            .stmt("SELECT v, record FROM settlements WHERE scope = ? AND settlement_id = ?")
            .get(key, id) as SettlementRow | undefined,
      ),
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
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT v, record FROM settlements WHERE scope = ? AND (? IS NULL OR session_id = ?) AND (? IS NULL OR turn_id = ?)
             AND (at, settlement_id) > (?, ?) ORDER BY at, settlement_id LIMIT ?`,
          )
          .all(
            key,
            sessionId,
            sessionId,
            turnId,
            turnId,
            after[0],
            after[1],
            limit + 1,
          ) as SettlementRow[],
    );
    return settlementPage(rows, limit);
  }

  async pending(
    scope: Scope,
    consumer: string,
    limit?: number,
  ): Promise<readonly SettlementRecord[]> {
    const { key, consumer: c, max } = preparePending(scope, consumer, limit);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT s.v, s.record FROM settlement_obligations o
             JOIN settlements s ON s.scope = o.scope AND s.settlement_id = o.settlement_id
             WHERE o.scope = ? AND o.consumer = ? AND o.acknowledged = 0 ORDER BY s.at, s.settlement_id LIMIT ?`,
          )
          .all(key, c, max) as SettlementRow[],
    );
    return settlementsOf(rows);
  }

  async acknowledge(scope: Scope, consumer: string, settlementId: string): Promise<void> {
    const { key, consumer: c, id } = prepareAcknowledge(scope, consumer, settlementId);
    this.#db.write(() =>
      this.#db
        .stmt(
          "UPDATE settlement_obligations SET acknowledged = 1 WHERE scope = ? AND consumer = ? AND settlement_id = ?",
        )
        .run(key, c, id),
    );
  }
}

/** Spend counters in SQLite; they move only inside `SqliteCostSettlementStore.settle`. */
export class SqliteSpendStore implements SpendStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async peek(
    scope: Scope,
    sessionId: string,
    day: string,
  ): Promise<{ readonly sessionMicros: number; readonly tenantDayMicros: number }> {
    const { key, org, id, day: d } = preparePeek(scope, sessionId, day);
    return this.#db.guard(() => {
      const session = this.#db
        .stmt("SELECT usd_micros FROM spend_sessions WHERE scope = ? AND session_id = ?")
        .get(key, id) as { usd_micros: number } | undefined;
      const tenant = this.#db
        .stmt("SELECT usd_micros FROM spend_tenant_days WHERE org = ? AND day = ?")
        .get(org, d) as { usd_micros: number } | undefined;
      return spendView(session?.usd_micros, tenant?.usd_micros);
    });
  }

  async tenantDays(
    org: string,
    opts: { readonly from?: string; readonly to?: string } = {},
  ): Promise<readonly { readonly day: string; readonly usdMicros: number }[]> {
    const { org: tenant, from, to } = prepareTenantDays(org, opts);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            "SELECT day, usd_micros FROM spend_tenant_days WHERE org = ? AND day >= ? AND day <= ? ORDER BY day",
          )
          .all(tenant, from, to) as TenantDayRow[],
    );
    return tenantDaysOf(rows);
  }
}
