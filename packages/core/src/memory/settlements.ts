import { type Scope, validateId } from "../scope.js";
import { SettlementConflictError } from "../stores/errors.js";
import type {
  CostSettlementStore,
  SettlementInput,
  SettlementRecord,
  SpendStore,
} from "../stores/settlements.js";
import { normalizeSettlement } from "../stores/normalize.js";
import {
  closedObject,
  decodeCursor,
  PAGE,
  pageLimit,
  pageOf,
  sameJson,
  scopeKey,
  validateDay,
  validateOrg,
} from "../stores/rules.js";
import type { PersistentCapName } from "../caps.js";
import type { ClaimReservation } from "../stores/execution.js";
import { reservationRefusal } from "../stores/transitions.js";
import { isErasedMark } from "../stores/erasure.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

interface Held {
  readonly session: string;
  readonly org: string;
  readonly day: string;
  readonly micros: number;
  readonly expiresAt: number;
}

interface Counters {
  readonly sessions: Map<string, number>;
  readonly tenantDays: Map<string, Map<string, number>>;
  /** `scope operationId` → the money a call in flight holds. */
  readonly held: Map<string, Held>;
}

let countersOf: (store: InMemorySpendStore) => Counters;

/**
 * Reserves a call's worst case on `spend`, synchronously (the memory journal's claim runs this in
 * its own atomic step): refused with the limit it would pass, or held under `scope operationId`.
 */
export function reserveSpend(
  spend: InMemorySpendStore,
  at: {
    readonly scopeKey: string;
    readonly org: string;
    readonly sessionId: string;
    readonly operationId: string;
    readonly now: number;
  },
  reservation: ClaimReservation,
): PersistentCapName | undefined {
  const counters = countersOf(spend);
  const session = `${at.scopeKey} ${at.sessionId}`;
  let heldSession = 0;
  let heldDay = 0;
  for (const h of counters.held.values()) {
    if (h.expiresAt <= at.now) continue;
    if (h.session === session) heldSession += h.micros;
    if (h.org === at.org && h.day === reservation.day) heldDay += h.micros;
  }
  const use = {
    session: (counters.sessions.get(session) ?? 0) + heldSession,
    tenantDay: (counters.tenantDays.get(at.org)?.get(reservation.day) ?? 0) + heldDay,
  };
  const refused = reservationRefusal(reservation.limits, use, reservation.usdMicros);
  if (refused) return refused;
  counters.held.set(`${at.scopeKey} ${at.operationId}`, {
    session,
    org: at.org,
    day: reservation.day,
    micros: reservation.usdMicros,
    expiresAt: reservation.expiresAt,
  });
  return undefined;
}

/** Releases what a call held (a no-op when it held nothing). */
export function releaseSpend(
  spend: InMemorySpendStore,
  scopeKeyText: string,
  operationId: string,
): void {
  countersOf(spend).held.delete(`${scopeKeyText} ${operationId}`);
}

/**
 * Spend counters in memory. They move only when an `InMemoryCostSettlementStore` built on this
 * store applies a receipt; reservations are held by an `InMemoryExecutionStore` built on it.
 */
export class InMemorySpendStore implements SpendStore, Erasable {
  readonly #counters: Counters = { sessions: new Map(), tenantDays: new Map(), held: new Map() };

  static {
    countersOf = (store) => store.#counters;
  }

  /**
   * Drops the target's per-session spend; the reservations its calls hold stay (under the session's
   * mark) until they settle or expire, so the tenant-day caps still count them. Tenant-day totals
   * stay as they are.
   */
  [ERASE](target: EraseTarget): number {
    const idOf = (session: string) =>
      session.startsWith(`${target.key} `) ? session.slice(target.key.length + 1) : undefined;
    const inTarget = (id: string | undefined): id is string =>
      id !== undefined && !isErasedMark(id) && covers(target, target.key, id);
    for (const session of [...this.#counters.sessions.keys()])
      if (inTarget(idOf(session))) this.#counters.sessions.delete(session);
    for (const [key, held] of this.#counters.held) {
      const id = idOf(held.session);
      if (inTarget(id))
        this.#counters.held.set(key, { ...held, session: `${target.key} ${markOf(target, id)}` });
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return this.#counters;
  }

  async peek(
    scope: Scope,
    sessionId: string,
    day: string,
  ): Promise<{ readonly sessionMicros: number; readonly tenantDayMicros: number }> {
    const { scope: s, key } = scopeKey(scope);
    const session = validateId("sessionId", sessionId);
    const d = validateDay("day", day);
    return Object.freeze({
      sessionMicros: this.#counters.sessions.get(`${key} ${session}`) ?? 0,
      tenantDayMicros: this.#counters.tenantDays.get(s.org)?.get(d) ?? 0,
    });
  }

  async tenantDays(
    org: string,
    opts: { readonly from?: string; readonly to?: string } = {},
  ): Promise<readonly { readonly day: string; readonly usdMicros: number }[]> {
    const tenant = validateOrg(org);
    const o = closedObject("opts", opts, ["from", "to"]);
    const from = o.from === undefined ? undefined : validateDay("from", o.from);
    const to = o.to === undefined ? undefined : validateDay("to", o.to);
    const days = [...(this.#counters.tenantDays.get(tenant) ?? new Map<string, number>())]
      .filter(([day]) => (from === undefined || day >= from) && (to === undefined || day <= to))
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([day, usdMicros]) => Object.freeze({ day, usdMicros }));
    return Object.freeze(days);
  }
}

interface Stored {
  readonly record: SettlementRecord;
  readonly acknowledged: Set<string>;
}

/**
 * The reference settlement store. `settle` validates, then in one synchronous step records the
 * receipt and moves the spend store's counters, so a receipt is counted exactly once.
 */
export class InMemoryCostSettlementStore implements CostSettlementStore, Erasable {
  /** The counters this store moves (the one given, or its own). */
  readonly spend: InMemorySpendStore;
  readonly #rows = new Map<string, Stored>();

  constructor(opts: { readonly spend?: InMemorySpendStore } = {}) {
    this.spend = opts.spend ?? new InMemorySpendStore();
  }

  async settle(input: SettlementInput): Promise<SettlementRecord> {
    const s = normalizeSettlement(input);
    const { key } = scopeKey(s.scope);
    const rowKey = `${key} ${s.receipt.settlementId}`;
    const existing = this.#rows.get(rowKey);
    if (existing) {
      const { status: _status, ...original } = existing.record;
      if (!sameJson(original, s)) throw new SettlementConflictError(s.receipt.settlementId);
      return Object.freeze({ ...existing.record, status: "replayed" });
    }
    const record: SettlementRecord = Object.freeze({ ...s, status: "applied" });
    this.#rows.set(rowKey, { record, acknowledged: new Set() });
    // The call's reservation ends in the same step its actual price is counted.
    releaseSpend(this.spend, key, s.receipt.operationId);
    const counters = countersOf(this.spend);
    const sessionKey = `${key} ${s.sessionId}`;
    counters.sessions.set(
      sessionKey,
      (counters.sessions.get(sessionKey) ?? 0) + s.receipt.usdMicros,
    );
    const days = counters.tenantDays.get(s.scope.org) ?? new Map<string, number>();
    days.set(s.day, (days.get(s.day) ?? 0) + s.receipt.usdMicros);
    counters.tenantDays.set(s.scope.org, days);
    return record;
  }

  async get(scope: Scope, settlementId: string): Promise<SettlementRecord | undefined> {
    return this.#rows.get(`${scopeKey(scope).key} ${validateId("settlementId", settlementId)}`)
      ?.record;
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
    const prefix = `${scopeKey(scope).key} `;
    const o = closedObject("opts", opts, ["sessionId", "turnId", "cursor", "limit"]);
    const sessionId = o.sessionId === undefined ? undefined : validateId("sessionId", o.sessionId);
    const turnId = o.turnId === undefined ? undefined : validateId("turnId", o.turnId);
    const limit = pageLimit(o.limit, PAGE.settlements.def, PAGE.settlements.max);
    const after = decodeCursor(o.cursor, ["number", "string"]);
    const rows = this.#scoped(prefix).filter(
      (r) =>
        (sessionId === undefined || r.sessionId === sessionId) &&
        (turnId === undefined || r.receipt.turnId === turnId),
    );
    return Object.freeze(pageOf(rows, (r) => [r.at, r.receipt.settlementId], after, limit));
  }

  async pending(
    scope: Scope,
    consumer: string,
    limit?: number,
  ): Promise<readonly SettlementRecord[]> {
    const prefix = `${scopeKey(scope).key} `;
    const c = validateId("consumer", consumer);
    const max = pageLimit(limit, PAGE.pending.def, PAGE.pending.max);
    const open = this.#scoped(prefix).filter((r) => {
      const acked = this.#rows.get(`${prefix}${r.receipt.settlementId}`)?.acknowledged;
      return r.consumers.includes(c) && !acked?.has(c);
    });
    return Object.freeze(open.slice(0, max));
  }

  async acknowledge(scope: Scope, consumer: string, settlementId: string): Promise<void> {
    const { key } = scopeKey(scope);
    const c = validateId("consumer", consumer);
    const row = this.#rows.get(`${key} ${validateId("settlementId", settlementId)}`);
    if (row?.record.consumers.includes(c)) row.acknowledged.add(c);
  }

  /** Keeps the target's receipts (amounts, usage, ids) with the session id replaced by its mark. */
  [ERASE](target: EraseTarget): number {
    for (const [key, row] of this.#rows) {
      const { sessionId } = row.record;
      if (
        !key.startsWith(`${target.key} `) ||
        isErasedMark(sessionId) ||
        !covers(target, target.key, sessionId)
      )
        continue;
      this.#rows.set(key, {
        record: Object.freeze({ ...row.record, sessionId: markOf(target, sessionId) }),
        acknowledged: row.acknowledged,
      });
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return this.#rows;
  }

  #scoped(prefix: string): SettlementRecord[] {
    const rows = [...this.#rows].filter(([k]) => k.startsWith(prefix)).map(([, v]) => v.record);
    return rows.sort(
      (a, b) => a.at - b.at || (a.receipt.settlementId < b.receipt.settlementId ? -1 : 1),
    );
  }
}
