import {
  type CostSettlementStore,
  canonicalJson,
  type JsonValue,
  type Scope,
  SettlementConflictError,
  type SettlementInput,
  type SettlementRecord,
  type SpendStore,
  validateId,
} from "@alma-harness/core";
import {
  closedObject,
  decodeCursor,
  normalizeSettlement,
  PAGE,
  pageLimit,
  pageOfFetched,
  RECORD_VERSION,
  type SettlementRow,
  scopeKey,
  settlementFromRow,
  type TenantDayRow,
  tenantDayFromRow,
  validateDay,
  validateOrg,
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
    const s = normalizeSettlement(input);
    const { key } = scopeKey(s.scope);
    const text = canonicalJson(s as unknown as JsonValue);
    const id = s.receipt.settlementId;
    return this.#db.write(() => {
      const existing = this.#db.stmt("SELECT v, record FROM settlements WHERE scope = ? AND settlement_id = ?").get(key, id) as SettlementRow | undefined;
      if (existing) {
        if (existing.record !== text) throw new SettlementConflictError(id);
        return settlementFromRow(existing, "replayed");
      }
      this.#db
        .stmt("INSERT INTO settlements (scope, settlement_id, session_id, turn_id, at, v, record) VALUES (?, ?, ?, ?, ?, ?, ?)")
        .run(key, id, s.sessionId, s.receipt.turnId, s.at, RECORD_VERSION, text);
      const owe = this.#db.stmt("INSERT INTO settlement_obligations (scope, settlement_id, consumer) VALUES (?, ?, ?)");
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
      return Object.freeze({ ...s, status: "applied" as const });
    });
  }

  async get(scope: Scope, settlementId: string): Promise<SettlementRecord | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("settlementId", settlementId);
    const row = this.#db.guard(
      () => this.#db.stmt("SELECT v, record FROM settlements WHERE scope = ? AND settlement_id = ?").get(key, id) as SettlementRow | undefined,
    );
    return row ? settlementFromRow(row) : undefined;
  }

  async list(
    scope: Scope,
    opts: { readonly sessionId?: string; readonly turnId?: string; readonly cursor?: string; readonly limit?: number } = {},
  ): Promise<{ readonly items: readonly SettlementRecord[]; readonly nextCursor?: string }> {
    const { key } = scopeKey(scope);
    const o = closedObject("opts", opts, ["sessionId", "turnId", "cursor", "limit"]);
    const sessionId = o.sessionId === undefined ? null : validateId("sessionId", o.sessionId);
    const turnId = o.turnId === undefined ? null : validateId("turnId", o.turnId);
    const limit = pageLimit(o.limit, PAGE.settlements.def, PAGE.settlements.max);
    const after = decodeCursor(o.cursor, ["number", "string"]) ?? [-1, ""];
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT v, record FROM settlements WHERE scope = ? AND (? IS NULL OR session_id = ?) AND (? IS NULL OR turn_id = ?)
             AND (at, settlement_id) > (?, ?) ORDER BY at, settlement_id LIMIT ?`,
          )
          .all(key, sessionId, sessionId, turnId, turnId, after[0], after[1], limit + 1) as SettlementRow[],
    );
    return Object.freeze(pageOfFetched(rows.map((r) => settlementFromRow(r)), limit, (r) => [r.at, r.receipt.settlementId]));
  }

  async pending(scope: Scope, consumer: string, limit?: number): Promise<readonly SettlementRecord[]> {
    const { key } = scopeKey(scope);
    const c = validateId("consumer", consumer);
    const max = pageLimit(limit, PAGE.pending.def, PAGE.pending.max);
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
    return Object.freeze(rows.map((r) => settlementFromRow(r)));
  }

  async acknowledge(scope: Scope, consumer: string, settlementId: string): Promise<void> {
    const { key } = scopeKey(scope);
    const c = validateId("consumer", consumer);
    const id = validateId("settlementId", settlementId);
    this.#db.write(() =>
      this.#db.stmt("UPDATE settlement_obligations SET acknowledged = 1 WHERE scope = ? AND consumer = ? AND settlement_id = ?").run(key, c, id),
    );
  }
}

/** Spend counters in SQLite; they move only inside `SqliteCostSettlementStore.settle`. */
export class SqliteSpendStore implements SpendStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async peek(scope: Scope, sessionId: string, day: string): Promise<{ readonly sessionMicros: number; readonly tenantDayMicros: number }> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("sessionId", sessionId);
    const d = validateDay("day", day);
    return this.#db.guard(() => {
      const session = this.#db.stmt("SELECT usd_micros FROM spend_sessions WHERE scope = ? AND session_id = ?").get(key, id) as
        | { usd_micros: number }
        | undefined;
      const tenant = this.#db.stmt("SELECT usd_micros FROM spend_tenant_days WHERE org = ? AND day = ?").get(s.org, d) as { usd_micros: number } | undefined;
      return Object.freeze({ sessionMicros: session?.usd_micros ?? 0, tenantDayMicros: tenant?.usd_micros ?? 0 });
    });
  }

  async tenantDays(org: string, opts: { readonly from?: string; readonly to?: string } = {}): Promise<readonly { readonly day: string; readonly usdMicros: number }[]> {
    const tenant = validateOrg(org);
    const o = closedObject("opts", opts, ["from", "to"]);
    const from = o.from === undefined ? "" : validateDay("from", o.from);
    const to = o.to === undefined ? "9999-12-31" : validateDay("to", o.to);
    const rows = this.#db.guard(
      () =>
        this.#db.stmt("SELECT day, usd_micros FROM spend_tenant_days WHERE org = ? AND day >= ? AND day <= ? ORDER BY day").all(tenant, from, to) as TenantDayRow[],
    );
    return Object.freeze(rows.map(tenantDayFromRow));
  }
}
