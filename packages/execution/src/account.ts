import type { BudgetCapName, CostReceipt } from "@alma-harness/core";

/** What the governed call keeps per turn; only this package reads or moves it. */
export interface Ledger {
  /** Micro-dollars settled by the turn's calls. */
  spentMicros: number;
  /** Worst cases held by the turn's calls in flight (main and children). */
  reservedMicros: number;
  /** Calls claimed in the journal (refused calls are not counted). */
  calls: number;
  /** Operation ids claimed without a settled cost and not cancelled `not_dispatched` (spec: call-retry, `unsettledCalls`). */
  readonly unsettled: Set<string>;
  readonly receipts: CostReceipt[];
  /** Caps already warned about in this turn (warnings are deduplicated per turn). */
  readonly warned: Set<BudgetCapName>;
}

/** A turn's money at a step boundary (no call in flight): what it settled, claimed and warned. */
export interface AccountState {
  readonly spentMicros: number;
  /** Calls claimed in the journal. */
  readonly calls: number;
  /** Operation ids claimed without a settled cost. */
  readonly unsettled: readonly string[];
  readonly receipts: readonly CostReceipt[];
  /** Caps already warned about in this turn. */
  readonly warned: readonly BudgetCapName[];
}

let ledgerOf: (account: TurnAccount) => Ledger;

/**
 * One turn's money, shared by every call of its root (main, direct, delegate, summary). Opened by
 * `GovernedCalls.account()`; callers read it, only the governed call moves it. A per-turn block cap
 * is checked against what is settled plus what the turn's calls in flight hold, synchronously, so
 * parallel children can never overrun it.
 */
export class TurnAccount {
  readonly #ledger: Ledger;

  /** A new account, or the one a turn had at a step boundary (nothing in flight there). */
  constructor(from?: AccountState) {
    this.#ledger = {
      spentMicros: from?.spentMicros ?? 0,
      reservedMicros: 0,
      calls: from?.calls ?? 0,
      unsettled: new Set(from?.unsettled ?? []),
      receipts: [...(from?.receipts ?? [])],
      warned: new Set(from?.warned ?? []),
    };
  }

  /** The account at a step boundary, as data another process opens the same account from. */
  state(): AccountState {
    const l = this.#ledger;
    return {
      spentMicros: l.spentMicros,
      calls: l.calls,
      unsettled: [...l.unsettled],
      receipts: [...l.receipts],
      warned: [...l.warned],
    };
  }

  static {
    ledgerOf = (account) => account.#ledger;
  }

  /** Micro-dollars settled so far. */
  get spentMicros(): number {
    return this.#ledger.spentMicros;
  }

  /** Micro-dollars held by calls in flight. */
  get reservedMicros(): number {
    return this.#ledger.reservedMicros;
  }

  /** Calls claimed in the journal. */
  get calls(): number {
    return this.#ledger.calls;
  }

  /** Claimed calls whose cost never settled and that were not cancelled as not dispatched. */
  get unsettled(): number {
    return this.#ledger.unsettled.size;
  }

  /** Every settled receipt, in settlement order. */
  get receipts(): readonly CostReceipt[] {
    return this.#ledger.receipts;
  }
}

/** The ledger behind an account, for the governed call alone. */
export function ledger(account: TurnAccount): Ledger {
  if (!(account instanceof TurnAccount))
    throw new TypeError("a governed call needs the TurnAccount its GovernedCalls opened");
  return ledgerOf(account);
}
