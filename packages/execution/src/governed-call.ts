import type {
  BudgetCaps,
  ModelChoice,
  ModelClient,
  ModelRequest,
  PriceTable,
  Scope,
} from "@alma-harness/core";
import { type AccountState, ledger, TurnAccount } from "./account.js";
import { admit } from "./admit.js";
import { dispatchAndSettle } from "./call.js";
import { DeferredCalls } from "./deferred.js";
import { resolveConfig } from "./resolve-config.js";
import { provenUnsent } from "./retry.js";
import type {
  CallIdentity,
  CallOptions,
  CallOutcome,
  GovernedCallsConfig,
  ResolvedCallsConfig,
} from "./types.js";

export type {
  CallIdentity,
  CallOptions,
  CallOutcome,
  GovernedCallsConfig,
  ResolvedCallsConfig,
} from "./types.js";

/**
 * The governed call, whole. `run` does everything for one model call, in this order: price
 * preflight (anything the table cannot price is refused at zero cost) → the call's worst case held
 * against the turn's cap (in process) → `validate` (no I/O) → one durable write: the journal claim,
 * fenced by the turn's admission, with the worst case reserved against the session and tenant-day
 * block caps → routing (and lifecycle) trails → journal `dispatching`, committed before any byte
 * leaves → the stream, validated under the round's deadline → usage evidence → price → one
 * settlement (stable id; the reservation released in its transaction) → journal completion → cost
 * and routing trails. A call whose usage cannot be priced after dispatch is uncertain, never guessed.
 */
export class GovernedCalls {
  readonly #config: ResolvedCallsConfig;
  #deferred: DeferredCalls | undefined;

  constructor(config: GovernedCallsConfig) {
    this.#config = resolveConfig(config);
  }

  get prices(): PriceTable {
    return this.#config.prices;
  }

  get caps(): BudgetCaps {
    return this.#config.caps;
  }

  /** Resolves once every cut call's late read has ended and its usage, if any, is in the inbox (at once without one). */
  lateUsageDrained(): Promise<void> {
    return this.#config.late?.drained() ?? Promise.resolve();
  }

  /**
   * A new turn's account: every call of one root runs against the same one. A resumed turn opens
   * the account its continuation recorded at the step boundary it parked at.
   */
  account(from?: AccountState): TurnAccount {
    return new TurnAccount(from);
  }

  async run(
    identity: CallIdentity,
    client: ModelClient,
    choice: ModelChoice,
    asked: ModelRequest,
    options: CallOptions,
  ): Promise<CallOutcome> {
    const config = this.#config;
    const admitted = await admit(
      config,
      identity,
      choice,
      asked,
      options,
      (request) => client.validate(request),
      client.provider,
    );
    if (admitted.status === "refused") return admitted;
    const { request, fence, books, worst, before, now } = admitted;
    const call = {
      config,
      identity,
      client,
      choice,
      request,
      options,
      fence,
      books,
      worst,
      before,
      now,
    };
    options.onDispatch?.();
    return dispatchAndSettle(call);
  }

  /**
   * The deferred face of the same call (`deferred.ts`): everything `run` does before the dispatch,
   * for a call whose answer arrives later, possibly in another process (a provider batch job).
   */
  get deferred(): DeferredCalls {
    this.#deferred ??= new DeferredCalls(
      this.#config,
      (identity, choice, request, options, validate, provider, deadlineMs) =>
        admit(this.#config, identity, choice, request, options, validate, provider, deadlineMs),
    );
    return this.#deferred;
  }

  /** Whether the journal proves the call was never sent (see `provenUnsent`): what a store failure before the provider needs to be tried again. */
  provenUnsent(account: TurnAccount, scope: Scope, operationId: string): Promise<boolean> {
    return provenUnsent(
      this.#config.journal,
      ledger(account),
      scope,
      operationId,
      this.#config.clock.now(),
    );
  }
}
