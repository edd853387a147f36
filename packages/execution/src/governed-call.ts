import {
  type AuditLog,
  type BudgetCapName,
  type BudgetCaps,
  blockingCapReached,
  type CallKind,
  type CostReceipt,
  type CostSettlementStore,
  type ExecutionStore,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  normalizePriceTable,
  type PriceTable,
  type Scope,
  type SpendStore,
  type UsageEvidence,
  utcDay,
  validateId,
} from "@alma-harness/core";
import { AuditFailedError, CallRefusedError, UnsettledCallError } from "./errors.js";
import { checkConsumers, checkNormalizedCaps, unpricedBeforeDispatch } from "./preflight.js";
import { Prepared } from "./prepared.js";

/** Per-turn money state shared by every call of a root (main, direct, delegate, summary). */
export interface TurnLedger {
  /** Micro-dollars settled by this turn so far. */
  spentMicros: number;
  readonly receipts: CostReceipt[];
  /** Caps already warned about in this turn (warnings are deduplicated per turn). */
  readonly warned: Set<BudgetCapName>;
  /** Calls claimed in the journal (refused calls are not counted). */
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
  /** Caps normalized by `normalizeBudgetCaps` (malformed caps throw `TypeError` here). */
  readonly caps: BudgetCaps;
  readonly policyVersion: string;
  readonly audit: AuditLog;
  readonly consumers?: readonly string[];
  /** Journal records expire this long after claim unless completed (the sweep fences them then). */
  readonly dispatchDeadlineMs?: number;
}

/** The validated configuration every prepared call reads. */
export interface ResolvedCallsConfig extends Omit<GovernedCallsConfig, "consumers" | "dispatchDeadlineMs"> {
  readonly consumers: readonly string[];
  readonly dispatchDeadlineMs: number;
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
  /** Commits `dispatching` in the journal, then starts the stream. Called at most once. */
  open(signal: AbortSignal): Promise<AsyncIterable<ModelStreamEvent>>;
  /** Records that the request was refused or abandoned before any byte left (no-op once opened). */
  cancel(cause: "aborted" | "invalid" | "audit" | "store" | "input"): Promise<void>;
  /** Keeps the evidence, prices it, settles once, completes the journal record, writes the cost trail. */
  settle(evidence: UsageEvidence): Promise<CostReceipt>;
}

const STORE_METHODS: readonly [keyof GovernedCallsConfig, readonly string[]][] = [
  ["journal", ["claim", "dispatch", "receive", "settle", "complete", "cancelPrepared"]],
  ["settlements", ["settle"]],
  ["spend", ["peek"]],
  ["audit", ["append"]],
];

function resolveConfig(config: GovernedCallsConfig): ResolvedCallsConfig {
  if (config === null || typeof config !== "object") throw new TypeError("GovernedCalls needs a configuration");
  for (const [name, methods] of STORE_METHODS) {
    const store = config[name] as unknown as Record<string, unknown> | undefined;
    if (!store || methods.some((m) => typeof store[m] !== "function")) throw new TypeError(`GovernedCalls: ${name} is not a ${name} store`);
  }
  const deadline = config.dispatchDeadlineMs ?? 15 * 60_000;
  if (!Number.isSafeInteger(deadline) || deadline < 1) throw new TypeError("dispatchDeadlineMs must be a positive integer");
  return Object.freeze({
    ...config,
    prices: normalizePriceTable(config.prices),
    caps: checkNormalizedCaps(config.caps),
    policyVersion: validateId("policyVersion", config.policyVersion),
    consumers: checkConsumers(config.consumers),
    dispatchDeadlineMs: deadline,
  });
}

/**
 * The governed step runner. For each model call: price preflight (anything the table cannot price:
 * refused at zero cost, nothing claimed) → cap preflight (a block cap already reached: refused at
 * zero cost) → `validate` (no I/O) → durable claim → durable dispatch → stream → usage evidence →
 * price → one settlement (stable id) → journal completion → cost trail. A call whose usage cannot
 * be priced after dispatch throws `UnsettledCallError`: the turn is uncertain, never guessed.
 */
export class GovernedCalls {
  readonly #config: ResolvedCallsConfig;

  constructor(config: GovernedCallsConfig) {
    this.#config = resolveConfig(config);
  }

  get prices(): PriceTable {
    return this.#config.prices;
  }

  get caps(): BudgetCaps {
    return this.#config.caps;
  }

  async prepare(
    identity: CallIdentity,
    client: ModelClient,
    choice: ModelChoice,
    request: ModelRequest,
    ledger: TurnLedger,
    now: number,
  ): Promise<PreparedCall> {
    const config = this.#config;
    const missing = unpricedBeforeDispatch(config.prices, choice, request);
    if (missing) {
      await this.#refusedTrail(identity, choice, now, "unpriced", `no price for ${missing}`);
      throw new CallRefusedError("unpriced", `${choice.model} cannot be priced (${missing}); nothing was sent`, { missing });
    }
    const day = utcDay(now);
    const totals = await config.spend.peek(identity.scope, identity.sessionId, day);
    const blocked = blockingCapReached(config.caps, { turn: ledger.spentMicros, session: totals.sessionMicros, tenantDay: totals.tenantDayMicros });
    if (blocked) {
      await this.#refusedTrail(identity, choice, now, "cap", blocked);
      throw new CallRefusedError("cap", `the ${blocked} cap is reached; nothing was sent`, { cap: blocked });
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
      deadlineAt: now + config.dispatchDeadlineMs,
    });
    if (claim.status !== "claimed") {
      throw new UnsettledCallError(`operation ${identity.operationId} was already claimed; it is never sent twice`);
    }
    ledger.calls += 1;
    return new Prepared({ config, identity, client, choice, request, fence: claim.fence, ledger, before: totals, now });
  }

  async #refusedTrail(identity: CallIdentity, choice: ModelChoice, at: number, reason: "unpriced" | "cap", detail: string): Promise<void> {
    try {
      await this.#config.audit.append({
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
    } catch (error) {
      throw new AuditFailedError("the cost trail could not record a refusal", error);
    }
  }
}
