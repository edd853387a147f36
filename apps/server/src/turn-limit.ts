import { HttpError } from "./http/errors.js";

/** How many turns one tenant runs at once in one host process unless configured. */
export const DEFAULT_TURNS_PER_TENANT = 64;

/** Seconds a client is asked to wait after a `429 too_many_turns`. */
export const TURN_LIMIT_RETRY_AFTER_S = 2;

/** Gives a slot back; calling it again does nothing, so every ending of a turn may call it. */
export type Release = () => void;

/** The release of a request that took no slot. */
export const NO_SLOT: Release = () => undefined;

/**
 * How many turns each tenant (org) runs at once in this process. A turn started over HTTP holds
 * one of its tenant's slots from before its first model call (the triage or the turn's) until it
 * ends, parks for an operator or fails; a request over the limit is refused with `429
 * too_many_turns` and `Retry-After`. Tenants count apart: one tenant at its limit never refuses
 * another's turn. The count is this process's; several hosts each hold their own.
 */
export class TurnLimit {
  readonly #running = new Map<string, number>();

  constructor(readonly perTenant: number) {
    if (!Number.isSafeInteger(perTenant) || perTenant < 1)
      throw new RangeError("turnsPerTenant must be a positive integer");
  }

  /** A slot of `org`'s, or undefined when the tenant runs its limit already. */
  tryTake(org: string): Release | undefined {
    const running = this.#running.get(org) ?? 0;
    if (running >= this.perTenant) return undefined;
    this.#running.set(org, running + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.#running.get(org) ?? 1) - 1;
      if (left > 0) this.#running.set(org, left);
      else this.#running.delete(org);
    };
  }

  /** The turns `org` runs now. */
  running(org: string): number {
    return this.#running.get(org) ?? 0;
  }

  /** The typed refusal of a turn over the limit. */
  refusal(): HttpError {
    return new HttpError(
      "too_many_turns",
      `this tenant runs ${this.perTenant} turns at once already; retry the same request later`,
      { retryable: true, headers: { "retry-after": String(TURN_LIMIT_RETRY_AFTER_S) } },
    );
  }
}
