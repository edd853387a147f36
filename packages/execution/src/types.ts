import type {
  AuditLog,
  BudgetCapName,
  BudgetCaps,
  CallKind,
  Clock,
  CostReceipt,
  CostSettlementStore,
  ExecutionStore,
  PriceTable,
  ProviderError,
  RejectionKind,
  ReservationLimits,
  Scope,
  Sensitivity,
  SpendStore,
  Tier,
  TrailValue,
  UnpricedReason,
  UsageInbox,
} from "@alma-harness/core";
import type { TurnAccount } from "./account.js";
import type { LateUsage } from "./late-usage.js";
import type { StepOutput } from "./stream-validate.js";

/** The governed call's configuration and its per-call data, read by every part of the call. */

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
  /** A reservation of a call that may have been sent stays held this long past its journal deadline. */
  readonly reservationHoldMs?: number;
  readonly clock?: Clock;
  /**
   * The prompt-cache routing key of a call (OpenAI `prompt_cache_key`), scoped and pseudonymous:
   * the host derives it, for example a keyed pseudonym of the tenant, and never returns a raw id.
   * Absent: no key is sent. A throw makes the call uncertain before anything is claimed.
   */
  readonly cacheKey?: (call: {
    readonly scope: Scope;
    readonly sessionId: string;
    readonly kind: CallKind;
  }) => string | undefined;
  /**
   * Where the usage of a cut call's stream goes when the stream finishes after the cut (`LateUsage`):
   * evidence for the operator only, never a settlement. Absent: a cut call's stream is closed at once.
   */
  readonly usageInbox?: UsageInbox;
  /** How long a cut call's stream is read on for its late usage (default 60 s). */
  readonly lateUsageGraceMs?: number;
  /**
   * The largest request a call sends, in characters of its JSON (`requestChars` in core: system,
   * messages, tools and output schema, UTF-16 code units). A request over it is refused before
   * dispatch: its claim ends `not_dispatched` (cause `invalid`) and the call is uncertain
   * `call:<kind>:request_invalid`, never tried again (spec: refused-request). Absent: no ceiling.
   */
  readonly maxRequestChars?: number;
}

/** The validated configuration every call reads. */
export interface ResolvedCallsConfig
  extends Omit<
    GovernedCallsConfig,
    | "consumers"
    | "dispatchDeadlineMs"
    | "reservationHoldMs"
    | "clock"
    | "usageInbox"
    | "lateUsageGraceMs"
  > {
  /** Reads a cut call's stream on for its late usage (absent without a `usageInbox`). */
  readonly late: LateUsage | undefined;
  readonly consumers: readonly string[];
  readonly dispatchDeadlineMs: number;
  readonly reservationHoldMs: number;
  readonly clock: Clock;
  /** The persistent block caps the journal checks each reservation against (empty: nothing reserved). */
  readonly limits: ReservationLimits;
  /** Whether a call reads spend before it runs (a session or tenant-day cap, for the crossings it reports). */
  readonly peeks: boolean;
  /** Whether any block cap applies, so each call's worst case is measured and held. */
  readonly blocks: boolean;
  /** Whether a session or tenant-day block cap applies, so the claim reserves in the store. */
  readonly reserves: boolean;
}

export interface CallIdentity {
  readonly scope: Scope;
  readonly sessionId: string;
  /** The session's keyed pseudonym (`sessionPseudonym`): what the call's trail records carry instead of `sessionId`. */
  readonly trailSession: TrailValue;
  readonly rootKey: string;
  readonly turnId: string;
  readonly operationId: string;
  readonly kind: CallKind;
  /** The admission the call is fenced by: the claim commits only while it is active and before its deadline. */
  readonly admissionId?: string;
  /**
   * A governed call outside a conversation turn (a single call, seed 001): the operation the host
   * asked for and this attempt of it. Its routing records carry both (with `callId`, the journal's
   * operation id), and its egress goes on the access trail, by provider and message count, before
   * the dispatch. Absent for a turn's calls, whose `turnId` keeps its conversation meaning.
   */
  readonly operation?: { readonly operationId: string; readonly attemptId: string };
}

/** Everything a call needs besides its identity, choice and request: plain data and the turn's account. */
export interface CallOptions {
  readonly account: TurnAccount;
  /** The turn's signal: its abort cancels the call (cause `cancelled` or `deadline`). */
  readonly signal: AbortSignal;
  /** The round's own deadline; past it the call is aborted (cause `call:<kind>:aborted`). */
  readonly roundTimeoutMs: number;
  readonly route: {
    readonly tier: Tier;
    readonly sensitivity: Sensitivity;
    readonly parentCallId?: TrailValue;
  };
  /** Tool-call ids seen earlier in the turn: a stream that repeats one is invalid. */
  readonly seenCallIds: ReadonlySet<string>;
  /** A main step: its lifecycle `model.request` record goes on the trail before egress. */
  readonly lifecycle?: {
    readonly step: number;
    readonly contextVersion: number;
    readonly messageRevision: number;
  };
  /**
   * The turn's answer-by time (spec: call-retry): the round is cut here too, cause
   * `call:<kind>:deadline`. Absent: only `roundTimeoutMs` and the turn's signal bound it.
   */
  readonly answerByAt?: number;
  /** Called once the claim and the trails are durable, just before the dispatch. */
  readonly onDispatch?: () => void;
}

/**
 * What one governed call came to. `settled`: the stream validated and its cost settled.
 * `refused`: nothing was claimed or sent, at zero cost (no price, or a block cap the call's worst
 * case does not fit under). `rejected`: the provider refused before anything streamed, attested
 * by its own evidence, settled at zero. Anything uncertain throws `UncertainCallError`.
 */
export type CallOutcome =
  | { readonly status: "settled"; readonly output: StepOutput; readonly receipt: CostReceipt }
  | { readonly status: "refused"; readonly reason: "unpriced"; readonly missing: UnpricedReason }
  | { readonly status: "refused"; readonly reason: "cap"; readonly cap: BudgetCapName }
  | {
      readonly status: "rejected";
      readonly proof: RejectionKind | "context_window";
      readonly error: ProviderError;
      readonly receipt: CostReceipt;
    };
