import type { BudgetCapName, CostReceipt, SpendTotals } from "../caps.js";
import type { Scope } from "../scope.js";
import { closedObject, validateCount } from "./rules.js";

export interface SettlementInput {
  readonly scope: Scope;
  readonly sessionId: string;
  /** Tenant-day the spend counts toward (UTC `YYYY-MM-DD` of the call). */
  readonly day: string;
  readonly receipt: CostReceipt;
  readonly at: number;
  /** Consumers that must acknowledge this receipt (up to 16; may be empty). */
  readonly consumers: readonly string[];
}

export interface SettlementRecord extends SettlementInput {
  readonly status: "applied" | "replayed";
}

/**
 * The one accounting path per call. Guarantees:
 * - `settle` applies a receipt once by its `settlementId` and moves the spend counters in the same
 *   transaction (session and tenant-day); a replay with equal input returns the original
 *   (`replayed`) and moves nothing; different input throws `SettlementConflictError`.
 * - `list` is ascending by (at, settlementId), default 50, at most 100, with an opaque cursor.
 * - `pending(consumer)` lists applied receipts the consumer has not acknowledged; `acknowledge`
 *   is idempotent and a replayed settlement never recreates an acknowledged obligation.
 */
export interface CostSettlementStore {
  settle(input: SettlementInput): Promise<SettlementRecord>;
  get(scope: Scope, settlementId: string): Promise<SettlementRecord | undefined>;
  list(
    scope: Scope,
    opts?: {
      readonly sessionId?: string;
      readonly turnId?: string;
      readonly cursor?: string;
      readonly limit?: number;
    },
  ): Promise<{ readonly items: readonly SettlementRecord[]; readonly nextCursor?: string }>;
  pending(scope: Scope, consumer: string, limit?: number): Promise<readonly SettlementRecord[]>;
  acknowledge(scope: Scope, consumer: string, settlementId: string): Promise<void>;
}

/**
 * Authoritative spend, read before a call to check caps. Counters move only through settlement.
 * `peek` is per tenant (`scope.org`) and day for tenant-day, per scope and session for sessions.
 */
export interface SpendStore {
  peek(
    scope: Scope,
    sessionId: string,
    day: string,
  ): Promise<{ readonly sessionMicros: number; readonly tenantDayMicros: number }>;
  /** Spend per day for a tenant, for the console. */
  tenantDays(
    org: string,
    opts?: { readonly from?: string; readonly to?: string },
  ): Promise<readonly { readonly day: string; readonly usdMicros: number }[]>;
}

export type { BudgetCapName };

/** The last day `utcDay` formatted, by its day number (`Date` truncates the instant, so this does too). */
let lastDay: { readonly number: number; readonly text: string } | undefined;

/** UTC day of an epoch-millisecond instant. */
export function utcDay(ms: number): string {
  const number = Math.floor(Math.trunc(ms) / 86_400_000);
  if (lastDay !== undefined && lastDay.number === number) return lastDay.text;
  const text = new Date(ms).toISOString().slice(0, 10);
  lastDay = { number, text };
  return text;
}

/**
 * Spend totals (`SpendStore.peek`'s answer, a model job item's `before`), closed and checked: the
 * two counters, each a non-negative integer of micro-dollars, frozen. Seed 001 names it with
 * `normalizeBudgetCaps`, `normalizeCostReceipt` and `costReceiptWarnings` among the shared
 * financial rules.
 */
export function normalizeSpendTotals(input: unknown, path = "totals"): SpendTotals {
  const t = closedObject(path, input, ["sessionMicros", "tenantDayMicros"]);
  return Object.freeze({
    sessionMicros: validateCount(`${path}.sessionMicros`, t.sessionMicros),
    tenantDayMicros: validateCount(`${path}.tenantDayMicros`, t.tenantDayMicros),
  });
}
