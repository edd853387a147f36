import {
  type CostReceipt,
  type ExecutionState,
  type ModelChoice,
  type ModelRequest,
  type NotDispatchedCause,
  ScopeFencedError,
  type UsageEvidence,
} from "@alma-harness/core";
import { ledger, type TurnAccount } from "./account.js";
import { settleReceived } from "./call.js";
import { UncertainCallError } from "./errors.js";
import type { AdmitOptions, Admitted, SpendBefore } from "./admit.js";
import type { CallIdentity, CallOutcome, ResolvedCallsConfig } from "./types.js";
import { servedTrail } from "./trails.js";

/**
 * A governed call claimed now and answered later (a provider batch job): plain data, so it can be
 * stored and settled by another process. `fenceToken` is the claim's fence; `worstMicros` the worst
 * case reserved against the block caps; `before` the spend read before the claim (the base of the
 * crossings its receipt reports), absent without a session or tenant-day cap.
 */
export interface DeferredTicket {
  readonly identity: CallIdentity;
  readonly choice: ModelChoice;
  readonly route: AdmitOptions["route"];
  readonly fenceToken: number;
  readonly worstMicros: number;
  readonly claimedAt: number;
  readonly before?: SpendBefore;
}

export type DeferredClaim =
  | { readonly status: "claimed"; readonly ticket: DeferredTicket; readonly request: ModelRequest }
  | Extract<CallOutcome, { status: "refused" }>;

/** What a deferred call's answer came to: its receipt, and whether this settler applied it (`false`: another settler did, earlier). */
export interface DeferredSettlement {
  readonly status: "settled";
  readonly receipt: CostReceipt;
  readonly applied: boolean;
}

export interface DeferredClaimOptions extends AdmitOptions {
  /** Checks the request against what the transport supports, without I/O (`ProviderError` → `request_invalid`). */
  readonly validate: (request: ModelRequest) => void;
  /** The provider the transport sends to (named on a single call's egress record; default `batch`). */
  readonly provider?: string;
  /** The journal deadline of the claim: past it the sweep fences the record. A batch job needs its window (default: the configuration's). */
  readonly deadlineMs?: number;
}

type AdmitFn = (
  identity: CallIdentity,
  choice: ModelChoice,
  request: ModelRequest,
  options: AdmitOptions,
  validate: (request: ModelRequest) => void,
  provider: string,
  deadlineMs?: number,
) => Promise<Admitted | Extract<CallOutcome, { status: "refused" }>>;

/** States a deferred settlement can finish from; the rest cannot be settled from an answer. */
const SETTLEABLE: ReadonlySet<ExecutionState> = new Set([
  "dispatching",
  "received",
  "settled",
  "completed",
]);

/**
 * The deferred face of `GovernedCalls` (`calls.deferred`): the same call as `run`, cut at the
 * dispatch. `claim` runs the shared pre-dispatch path (price preflight, the turn's cap, `validate`,
 * the claim with its reservation, the request trails); `dispatch` commits `dispatching` before the
 * caller's egress; `settle` takes the answer, whenever and wherever it arrives, through the one
 * settlement rule (`settleReceived`). Nothing here sends anything: the caller's transport does.
 */
export class DeferredCalls {
  readonly #config: ResolvedCallsConfig;
  readonly #admit: AdmitFn;

  constructor(config: ResolvedCallsConfig, admit: AdmitFn) {
    this.#config = config;
    this.#admit = admit;
  }

  /** Claims the call and reserves its worst case; refused at zero cost like `run` (nothing claimed). */
  async claim(
    identity: CallIdentity,
    choice: ModelChoice,
    request: ModelRequest,
    options: DeferredClaimOptions,
  ): Promise<DeferredClaim> {
    const admitted = await this.#admit(
      identity,
      choice,
      request,
      options,
      options.validate,
      options.provider ?? "batch",
      options.deadlineMs,
    );
    if (admitted.status === "refused") return admitted;
    const ticket: DeferredTicket = Object.freeze({
      identity,
      choice,
      route: options.route,
      fenceToken: admitted.fence.token,
      worstMicros: admitted.worst,
      claimedAt: admitted.now,
      ...(admitted.before !== undefined ? { before: admitted.before } : {}),
    });
    return { status: "claimed", ticket, request: admitted.request };
  }

  /**
   * `prepared → dispatching`, committed before the caller's egress; a failure proves nothing was
   * sent by this call. A scope fence over the call's scope refuses it (`UncertainCallError`, cause
   * `scope_fenced`, never retried): the record stays `prepared`, and the caller sends nothing and
   * cancels it (`cancel`, cause `scope_fenced`).
   */
  async dispatch(ticket: DeferredTicket): Promise<void> {
    try {
      await this.#config.journal.dispatch(fenceOf(ticket), this.#config.clock.now());
    } catch (error) {
      if (error instanceof ScopeFencedError)
        throw new UncertainCallError(
          "scope_fenced",
          "the call's scope is fenced: nothing was dispatched or sent",
          error,
        );
      throw new UncertainCallError(
        `call:${ticket.identity.kind}:error`,
        "the journal could not record the dispatch; nothing was sent",
        error,
        "unsent",
      );
    }
  }

  /** A claimed call that will not be sent: `not_dispatched` with the owner's cause, its reservation released. */
  async cancel(
    ticket: DeferredTicket,
    cause: Exclude<NotDispatchedCause, "expired">,
    account?: TurnAccount,
  ): Promise<void> {
    await this.#config.journal.cancelPrepared(fenceOf(ticket), cause, this.#config.clock.now());
    if (account) ledger(account).unsettled.delete(ticket.identity.operationId);
  }

  /**
   * Settles the answer of a dispatched call at the tier its usage says served, once, however many
   * settlers race: the journal's `receive` keeps the first evidence, a record another settler
   * received is settled from the journal's evidence (never the caller's), and a receipt already
   * applied is returned with `applied: false`. Only the settler whose receipt applied writes the
   * cost and served-tier trails. A record not dispatched, fenced by the sweep, or a usage that is
   * not known or not priced is uncertain (`UncertainCallError`), never guessed.
   */
  async settle(
    ticket: DeferredTicket,
    evidence: UsageEvidence,
    stop: string,
    account: TurnAccount,
  ): Promise<DeferredSettlement> {
    const config = this.#config;
    const { identity } = ticket;
    const books = ledger(account);
    const now = config.clock.now();
    const call = {
      config,
      identity,
      choice: ticket.choice,
      fence: fenceOf(ticket),
      books,
      worst: ticket.worstMicros,
      before: ticket.before,
      now,
      options: { route: ticket.route },
    };
    let record = await this.#read(ticket);
    if (record.state === "dispatching") {
      try {
        record = await config.journal.receive(call.fence, evidence, now);
      } catch (error) {
        // Another settler received it first (or the sweep fenced it): read what the journal holds now.
        record = await this.#read(ticket, error);
      }
    }
    if (
      !SETTLEABLE.has(record.state) ||
      record.state === "dispatching" ||
      record.evidence === undefined
    ) {
      throw new UncertainCallError(
        `call:${identity.kind}:error`,
        `operation ${identity.operationId} is ${record.state}; its answer cannot be settled`,
      );
    }
    // The account holds the worst case while this settler settles (the settlement releases it).
    books.reservedMicros += ticket.worstMicros;
    books.unsettled.add(identity.operationId);
    const settled = await settleReceived(call, record.evidence, stop, true).catch(
      (error: unknown) => {
        books.reservedMicros -= ticket.worstMicros;
        throw error;
      },
    );
    if (!settled.applied) books.reservedMicros -= ticket.worstMicros;
    else
      await servedTrail(config.audit, identity, ticket.choice, call.options, settled.receipt, now);
    return { status: "settled", receipt: settled.receipt, applied: settled.applied };
  }

  async #read(ticket: DeferredTicket, cause?: unknown) {
    const { identity } = ticket;
    let record: Awaited<ReturnType<ResolvedCallsConfig["journal"]["get"]>>;
    try {
      record = await this.#config.journal.get(identity.scope, identity.operationId);
    } catch (error) {
      throw new UncertainCallError(
        `call:${identity.kind}:error`,
        "the journal could not be read",
        error,
      );
    }
    if (record === undefined)
      throw new UncertainCallError(
        `call:${identity.kind}:error`,
        `operation ${identity.operationId} has no journal record`,
        cause,
      );
    if (record.fenceToken !== ticket.fenceToken)
      throw new UncertainCallError(
        `call:${identity.kind}:error`,
        `operation ${identity.operationId} was fenced by the sweep`,
        cause,
      );
    return record;
  }
}

function fenceOf(ticket: DeferredTicket) {
  return {
    scope: ticket.identity.scope,
    operationId: ticket.identity.operationId,
    token: ticket.fenceToken,
  };
}
