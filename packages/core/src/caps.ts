import { usdToMicros } from "./pricing.js";
import type { ServiceTier } from "./routing.js";
import type { Usage } from "./usage.js";

export type PersistentCapName = "perSessionUsd" | "perTenantDayUsd";
export type BudgetCapName = "perTurnUsd" | PersistentCapName;
/** Every budget cap's name, in cap order: the one list readers check against. */
export const BUDGET_CAP_NAMES: readonly BudgetCapName[] = Object.freeze([
  "perTurnUsd",
  "perSessionUsd",
  "perTenantDayUsd",
]);
export type CapAction = "block" | "warn";

/** A cap as the host writes it: a number, or `{usd, onExceeded}`. */
export type CapInput = number | { readonly usd: number; readonly onExceeded: CapAction };
export interface BudgetCapsInput {
  readonly perTurnUsd?: CapInput;
  readonly perSessionUsd?: CapInput;
  readonly perTenantDayUsd?: CapInput;
}

export interface NormalizedCap {
  readonly usdMicros: number;
  readonly onExceeded: CapAction;
}
export type BudgetCaps = Readonly<Partial<Record<BudgetCapName, NormalizedCap>>>;

function capFrom(input: unknown, name: BudgetCapName, numberMeans: CapAction): NormalizedCap {
  if (typeof input === "number") {
    if (!Number.isFinite(input) || input < 0)
      throw new TypeError(`${name} must be a non-negative finite number of USD`);
    return Object.freeze({ usdMicros: toMicros(input, name), onExceeded: numberMeans });
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new TypeError(`${name} must be a number or {usd, onExceeded: "block" | "warn"}`);
  }
  const keys = Object.keys(input);
  if (keys.some((k) => k !== "usd" && k !== "onExceeded"))
    throw new TypeError(`${name} has an unknown field`);
  const { usd, onExceeded } = input as { usd: unknown; onExceeded: unknown };
  if (typeof usd !== "number" || !Number.isFinite(usd) || usd < 0)
    throw new TypeError(`${name}.usd must be a non-negative finite number`);
  if (onExceeded !== "block" && onExceeded !== "warn")
    throw new TypeError(`${name}.onExceeded must be "block" or "warn"`);
  return Object.freeze({ usdMicros: toMicros(usd, name), onExceeded });
}

function toMicros(usd: number, name: string): number {
  try {
    return usdToMicros(usd, name);
  } catch {
    throw new TypeError(`${name} must have at most six decimals (whole micro-dollars)`);
  }
}

/** `perTurnUsd`: a number blocks; `{usd, onExceeded: "warn"}` continues and reports the crossing. */
export function normalizePerTurnCap(input: unknown): NormalizedCap {
  return capFrom(input, "perTurnUsd", "block");
}

/**
 * Validates and copies the caps. Malformed caps throw `TypeError`. `perTurnUsd` numbers block;
 * session and tenant-day numbers warn (block is opt-in with `{usd, onExceeded: "block"}`).
 */
export function normalizeBudgetCaps(input: unknown): BudgetCaps {
  if (input === undefined) return Object.freeze({});
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new TypeError("caps must be an object");
  const out: Partial<Record<BudgetCapName, NormalizedCap>> = {};
  for (const key of Object.keys(input)) {
    if (key !== "perTurnUsd" && key !== "perSessionUsd" && key !== "perTenantDayUsd") {
      throw new TypeError(`caps.${key} is not a cap (perTurnUsd, perSessionUsd, perTenantDayUsd)`);
    }
    const value = (input as Record<string, unknown>)[key];
    if (value === undefined) continue;
    out[key] = capFrom(value, key, key === "perTurnUsd" ? "block" : "warn");
  }
  return Object.freeze(out);
}

/**
 * Who made a model call: a turn's main step, a tool's direct call, a delegate, a rotation summary,
 * the memory extraction after a completed turn (its own route, under the root), or a governed
 * single call (`@alma-harness/single-call`).
 */
export type CallKind = "main" | "direct" | "delegate" | "summary" | "extraction" | "single";
/** Every call kind, the one list stores and vocabularies check against. */
export const CALL_KINDS: readonly CallKind[] = Object.freeze([
  "main",
  "direct",
  "delegate",
  "summary",
  "extraction",
  "single",
]);

/** The record of one priced, settled model call. */
export interface CostReceipt {
  readonly settlementId: string;
  readonly operationId: string;
  readonly turnId: string;
  readonly kind: CallKind;
  readonly clientId: string;
  readonly model: string;
  readonly serviceTier: ServiceTier;
  readonly usage: Usage;
  readonly usdMicros: number;
  readonly priceVersion: string;
  /** Caps this call's settlement crossed (precomputed evidence, in cap-name order). */
  readonly capsCrossed: readonly BudgetCapName[];
}

export interface CostWarning {
  readonly cap: BudgetCapName;
  readonly action: CapAction;
  readonly operationId: string;
}

/** The warnings a receipt carries, one per crossed cap, with the cap's configured action. */
export function costReceiptWarnings(
  receipt: CostReceipt,
  caps: BudgetCaps,
): readonly CostWarning[] {
  return receipt.capsCrossed.map((cap) => ({
    cap,
    action: caps[cap]?.onExceeded ?? "warn",
    operationId: receipt.operationId,
  }));
}

/** Spend read from the authoritative store before a call. */
export interface SpendTotals {
  readonly sessionMicros: number;
  readonly tenantDayMicros: number;
}

/** Which caps `after` crosses that `before` had not (strictly over the cap counts as crossed). */
export function capsCrossedBy(
  caps: BudgetCaps,
  before: { turn: number; session: number; tenantDay: number },
  after: { turn: number; session: number; tenantDay: number },
): BudgetCapName[] {
  const out: BudgetCapName[] = [];
  const pairs: [BudgetCapName, number, number][] = [
    ["perTurnUsd", before.turn, after.turn],
    ["perSessionUsd", before.session, after.session],
    ["perTenantDayUsd", before.tenantDay, after.tenantDay],
  ];
  for (const [name, b, a] of pairs) {
    const cap = caps[name];
    if (cap && b <= cap.usdMicros && a > cap.usdMicros) out.push(name);
  }
  return out;
}

/** Spend a reservation is checked against: what is settled plus what is reserved by calls in flight. */
export interface CapUse {
  readonly turn: number;
  readonly session: number;
  readonly tenantDay: number;
}

/**
 * The first block cap a call holding `micros` would pass, or undefined when it fits: a call fits
 * when what is used (settled plus reserved) plus its own worst case stays at or under every block
 * cap it falls under. The one rule of block caps (spec: caps under concurrency).
 */
export function capRefusing(
  caps: BudgetCaps,
  use: CapUse,
  micros: number,
): BudgetCapName | undefined {
  const pairs: [BudgetCapName, number][] = [
    ["perTurnUsd", use.turn],
    ["perSessionUsd", use.session],
    ["perTenantDayUsd", use.tenantDay],
  ];
  for (const [name, value] of pairs) {
    const cap = caps[name];
    if (cap && cap.onExceeded === "block" && value + micros > cap.usdMicros) return name;
  }
  return undefined;
}

/** A block cap already reached (spend at or over it): no call costing a micro-dollar or more fits. */
export function blockingCapReached(caps: BudgetCaps, spent: CapUse): BudgetCapName | undefined {
  return capRefusing(caps, spent, 1);
}
