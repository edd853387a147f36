import {
  capsCrossedBy,
  type CostEvent,
  type CostReceipt,
  type Fence,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  priceUsage,
  type UsageEvidence,
  utcDay,
} from "@alma-harness/core";
import { AuditFailedError, UnsettledCallError } from "./errors.js";
import type { CallIdentity, PreparedCall, ResolvedCallsConfig, TurnLedger } from "./governed-call.js";

export interface PreparedInit {
  readonly config: ResolvedCallsConfig;
  readonly identity: CallIdentity;
  readonly client: ModelClient;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
  readonly fence: Fence;
  readonly ledger: TurnLedger;
  /** Authoritative spend read at preflight: the base of the crossings this call reports. */
  readonly before: { readonly sessionMicros: number; readonly tenantDayMicros: number };
  readonly now: number;
}

/** One claimed call. Each transition runs once; a second `open` or `settle` throws `UnsettledCallError`. */
export class Prepared implements PreparedCall {
  readonly identity: CallIdentity;
  readonly #init: PreparedInit;
  #opened = false;
  #settled = false;

  constructor(init: PreparedInit) {
    this.#init = init;
    this.identity = init.identity;
  }

  async open(signal: AbortSignal): Promise<AsyncIterable<ModelStreamEvent>> {
    if (this.#opened) throw new UnsettledCallError("a prepared call is opened once");
    this.#opened = true;
    const { config, fence, now, client, request } = this.#init;
    // Committed before any byte leaves: a crash after this line is a `dispatching` record the sweep fences.
    await config.journal.dispatch(fence, now);
    return client.stream(request, signal);
  }

  async cancel(cause: "aborted" | "invalid" | "audit" | "store" | "input"): Promise<void> {
    if (this.#opened) return;
    this.#opened = true;
    await this.#init.config.journal.cancelPrepared(this.#init.fence, cause, this.#init.now);
  }

  async settle(evidence: UsageEvidence): Promise<CostReceipt> {
    if (this.#settled) throw new UnsettledCallError(`${this.identity.operationId} is settled once`);
    this.#settled = true;
    const { config, identity, fence, now, choice, ledger, before } = this.#init;
    await config.journal.receive(fence, evidence, now);
    if (evidence.status !== "known") {
      throw new UnsettledCallError(`usage of ${identity.operationId} is ${evidence.status}; its cost cannot be settled`);
    }
    const priced = priceUsage(config.prices, choice.model, evidence.usage);
    if (priced.status !== "priced") {
      throw new UnsettledCallError(`usage of ${identity.operationId} cannot be priced (missing ${priced.missing})`);
    }
    const turnBefore = ledger.spentMicros;
    const crossed = capsCrossedBy(
      config.caps,
      { turn: turnBefore, session: before.sessionMicros, tenantDay: before.tenantDayMicros },
      {
        turn: turnBefore + priced.usdMicros,
        session: before.sessionMicros + priced.usdMicros,
        tenantDay: before.tenantDayMicros + priced.usdMicros,
      },
    );
    const settlementId = `${identity.operationId}:settlement`;
    const receipt: CostReceipt = {
      settlementId,
      operationId: identity.operationId,
      turnId: identity.turnId,
      kind: identity.kind,
      clientId: choice.clientId,
      model: choice.model,
      serviceTier: priced.serviceTier,
      usage: evidence.usage,
      usdMicros: priced.usdMicros,
      priceVersion: priced.priceVersion,
      capsCrossed: crossed,
    };
    // The one accounting path: a replay of this id returns the original receipt, a changed one throws.
    const settled = await config.settlements.settle({
      scope: identity.scope,
      sessionId: identity.sessionId,
      day: utcDay(now),
      receipt,
      at: now,
      consumers: config.consumers,
    });
    await config.journal.settle(fence, settlementId, now);
    await config.journal.complete(fence, now);
    ledger.spentMicros += settled.receipt.usdMicros;
    ledger.receipts.push(settled.receipt);
    await this.#costTrail(settled.receipt);
    return settled.receipt;
  }

  /** One cost event per receipt; a cap crossed for the first time in the turn adds its warning. */
  async #costTrail(receipt: CostReceipt): Promise<void> {
    const { identity, config, ledger, now } = this.#init;
    const base: CostEvent = {
      trail: "cost",
      scope: identity.scope,
      sessionId: identity.sessionId,
      turnId: identity.turnId,
      callId: identity.operationId,
      at: now,
      operationId: identity.operationId,
      model: receipt.model,
      usdMicros: receipt.usdMicros,
      settlementId: receipt.settlementId,
      capsCrossed: receipt.capsCrossed,
    };
    const fresh = receipt.capsCrossed.filter((cap) => !ledger.warned.has(cap));
    for (const cap of fresh) ledger.warned.add(cap);
    const events: CostEvent[] =
      fresh.length === 0
        ? [base]
        : fresh.map((cap, i) => ({ ...base, ...(i === 0 ? {} : { usdMicros: 0 }), warning: { cap, action: config.caps[cap]?.onExceeded ?? "warn" } }));
    try {
      for (const event of events) await config.audit.append(event);
    } catch (error) {
      throw new AuditFailedError("the cost trail could not be written", error);
    }
  }
}
