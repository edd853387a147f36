import {
  type AuditLog,
  type BudgetCapName,
  type BudgetCaps,
  blockingCapReached,
  type CallKind,
  type CostReceipt,
  capsCrossedBy,
  type ExecutionStore,
  type Fence,
  isPriceable,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type PriceTable,
  priceUsage,
  type Scope,
  type CostSettlementStore,
  type SpendStore,
  type UsageEvidence,
  utcDay,
} from "@alma-harness/core";
import { CallRefusedError, UnsettledCallError } from "./errors.js";

/** Per-turn money state shared by every call of a root (main, direct, delegate, summary). */
export interface TurnLedger {
  /** Micro-dollars settled by this turn so far. */
  spentMicros: number;
  readonly receipts: CostReceipt[];
  /** Caps already warned about in this turn (warnings are deduplicated per turn). */
  readonly warned: Set<BudgetCapName>;
  calls: number;
}

export function newTurnLedger(): TurnLedger {
  return { spentMicros: 0, receipts: [], warned: new Set(), calls: 0 };
}

export interface GovernedCallsConfig {
  readonly journal: ExecutionStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly prices: PriceTable;
  readonly caps: BudgetCaps;
  readonly policyVersion: string;
  readonly audit: AuditLog;
  readonly consumers?: readonly string[];
  /** Journal records expire this long after claim unless completed (the sweep fences them then). */
  readonly dispatchDeadlineMs?: number;
}

export interface CallIdentity {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly turnId: string;
  readonly operationId: string;
  readonly kind: CallKind;
}

/** A claimed call: `open` commits the dispatch and starts the stream; `settle` prices and closes it. */
export interface PreparedCall {
  readonly identity: CallIdentity;
  open(signal: AbortSignal): Promise<AsyncIterable<ModelStreamEvent>>;
  /** Records that the request was refused or abandoned before any byte left. */
  cancel(cause: "aborted" | "invalid" | "audit" | "store" | "input"): Promise<void>;
  settle(evidence: UsageEvidence): Promise<CostReceipt>;
}

/**
 * The governed step runner. For each model call: price preflight (unpriced model or tier: refused
 * at zero cost, nothing claimed) → cap preflight (a block cap already reached: refused at zero
 * cost) → `validate` (no I/O) → durable claim → durable dispatch → stream → usage evidence →
 * price → one settlement (stable id) → journal completion → cost trail. A call whose usage cannot
 * be priced after dispatch throws `UnsettledCallError`: the turn is uncertain, never guessed.
 */
export class GovernedCalls {
  constructor(private readonly config: GovernedCallsConfig) {}

  get prices(): PriceTable {
    return this.config.prices;
  }

  get caps(): BudgetCaps {
    return this.config.caps;
  }

  async prepare(
    identity: CallIdentity,
    client: ModelClient,
    choice: ModelChoice,
    request: ModelRequest,
    ledger: TurnLedger,
    now: number,
  ): Promise<PreparedCall> {
    const { config } = this;
    if (!isPriceable(config.prices, choice.model, choice.serviceTier ?? "standard")) {
      await this.refusedTrail(identity, choice, now, "unpriced", `no price row for ${choice.model}`);
      throw new CallRefusedError("unpriced", `${choice.model} has no price at tier ${choice.serviceTier ?? "standard"}; nothing was sent`);
    }
    const day = utcDay(now);
    const totals = await config.spend.peek(identity.scope, identity.sessionId, day);
    const blocked = blockingCapReached(config.caps, { turn: ledger.spentMicros, session: totals.sessionMicros, tenantDay: totals.tenantDayMicros });
    if (blocked) {
      await this.refusedTrail(identity, choice, now, "cap", blocked);
      throw new CallRefusedError("cap", `the ${blocked} cap is reached; nothing was sent`, blocked);
    }
    client.validate(request);
    const claim = await config.journal.claim({
      scope: identity.scope,
      operationId: identity.operationId,
      sessionId: identity.sessionId,
      rootKey: identity.rootKey,
      turnId: identity.turnId,
      kind: identity.kind,
      clientId: choice.clientId,
      model: choice.model,
      priceVersion: config.prices.version,
      policyVersion: config.policyVersion,
      createdAt: now,
      deadlineAt: now + (config.dispatchDeadlineMs ?? 15 * 60_000),
    });
    if (claim.status !== "claimed") {
      throw new UnsettledCallError(`operation ${identity.operationId} was already claimed; it is never sent twice`);
    }
    ledger.calls += 1;
    return new Prepared(this.config, identity, client, choice, request, claim.fence, ledger, totals, now);
  }

  private async refusedTrail(identity: CallIdentity, choice: ModelChoice, at: number, reason: "unpriced" | "cap", detail: string) {
    await this.config.audit.append({
      trail: "cost",
      scope: identity.scope,
      sessionId: identity.sessionId,
      turnId: identity.turnId,
      callId: identity.operationId,
      at,
      operationId: identity.operationId,
      model: choice.model,
      usdMicros: 0,
      settlementId: "",
      capsCrossed: [],
      refused: { reason, detail },
    });
  }
}

class Prepared implements PreparedCall {
  private opened = false;

  constructor(
    private readonly config: GovernedCallsConfig,
    readonly identity: CallIdentity,
    private readonly client: ModelClient,
    private readonly choice: ModelChoice,
    private readonly request: ModelRequest,
    private readonly fence: Fence,
    private readonly ledger: TurnLedger,
    private readonly before: { sessionMicros: number; tenantDayMicros: number },
    private readonly now: number,
  ) {}

  async open(signal: AbortSignal): Promise<AsyncIterable<ModelStreamEvent>> {
    if (this.opened) throw new UnsettledCallError("a prepared call is opened once");
    this.opened = true;
    await this.config.journal.dispatch(this.fence, this.now);
    return this.client.stream(this.request, signal);
  }

  async cancel(cause: "aborted" | "invalid" | "audit" | "store" | "input"): Promise<void> {
    if (this.opened) return;
    this.opened = true;
    await this.config.journal.cancelPrepared(this.fence, cause, this.now);
  }

  async settle(evidence: UsageEvidence): Promise<CostReceipt> {
    const { config, identity } = this;
    await config.journal.receive(this.fence, evidence, this.now);
    if (evidence.status !== "known") {
      throw new UnsettledCallError(`usage of ${identity.operationId} is ${evidence.status}; its cost cannot be settled`);
    }
    const priced = priceUsage(config.prices, this.choice.model, evidence.usage);
    if (priced.status !== "priced") {
      throw new UnsettledCallError(`usage of ${identity.operationId} cannot be priced (missing ${priced.missing})`);
    }
    const turnBefore = this.ledger.spentMicros;
    const crossed = capsCrossedBy(
      config.caps,
      { turn: turnBefore, session: this.before.sessionMicros, tenantDay: this.before.tenantDayMicros },
      {
        turn: turnBefore + priced.usdMicros,
        session: this.before.sessionMicros + priced.usdMicros,
        tenantDay: this.before.tenantDayMicros + priced.usdMicros,
      },
    );
    const settlementId = `${identity.operationId}:settlement`;
    const receipt: CostReceipt = {
      settlementId,
      operationId: identity.operationId,
      turnId: identity.turnId,
      kind: identity.kind,
      clientId: this.choice.clientId,
      model: this.choice.model,
      serviceTier: priced.serviceTier,
      usage: evidence.usage,
      usdMicros: priced.usdMicros,
      priceVersion: priced.priceVersion,
      capsCrossed: crossed,
    };
    const settled = await config.settlements.settle({
      scope: identity.scope,
      sessionId: identity.sessionId,
      day: utcDay(this.now),
      receipt,
      at: this.now,
      consumers: config.consumers ?? [],
    });
    await config.journal.settle(this.fence, settlementId, this.now);
    await config.journal.complete(this.fence, this.now);
    this.ledger.spentMicros += settled.receipt.usdMicros;
    this.ledger.receipts.push(settled.receipt);
    await this.costTrail(settled.receipt);
    return settled.receipt;
  }

  private async costTrail(receipt: CostReceipt): Promise<void> {
    const { identity, config } = this;
    const base = {
      trail: "cost" as const,
      scope: identity.scope,
      sessionId: identity.sessionId,
      turnId: identity.turnId,
      callId: identity.operationId,
      at: this.now,
      operationId: identity.operationId,
      model: receipt.model,
      usdMicros: receipt.usdMicros,
      settlementId: receipt.settlementId,
      capsCrossed: receipt.capsCrossed,
    };
    const fresh = receipt.capsCrossed.filter((cap) => !this.ledger.warned.has(cap));
    if (fresh.length === 0) return config.audit.append(base);
    for (const [i, cap] of fresh.entries()) {
      this.ledger.warned.add(cap);
      const action = config.caps[cap]?.onExceeded ?? "warn";
      await config.audit.append(i === 0 ? { ...base, warning: { cap, action } } : { ...base, usdMicros: 0, warning: { cap, action } });
    }
  }
}
