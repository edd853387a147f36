import type { BudgetCapName, CallKind } from "../caps.js";
import type { RefusalCategory } from "../model.js";
import type { CacheTtl, ReasoningEffort, Sensitivity, ServiceTier, Tier } from "../routing.js";
import type { Scope } from "../scope.js";
import type { TrailValue } from "../trail.js";

export type Trail = "access" | "routing" | "cost" | "recall" | "context" | "policy" | "lifecycle";

/*
 * The trail rule (`../trail.ts`): every string field below is a closed literal union or a
 * `TrailValue`, which only identifiers, kinds, counts, sizes and keyed hashes inhabit. A new field
 * takes one of the two; the stores refuse any string of another shape on append.
 */

interface Base {
  readonly scope: Scope;
  /** The session's keyed pseudonym (`sessionPseudonym(key, scope, sessionId)`), never the session id. */
  readonly sessionId: TrailValue;
  readonly turnId: TrailValue;
  readonly callId?: TrailValue;
  readonly at: number;
}

/**
 * A resource a turn touched: by tool (a registered name; the resource a keyed hash unless the tool
 * declares it non-sensitive), media egress (provider, kind and size, never URI), search results
 * (provider and count, never query), deferred-tool loads (the registered name).
 */
export interface AccessEvent extends Base {
  readonly trail: "access";
  readonly tool: TrailValue;
  readonly resource: TrailValue;
  readonly action: "read" | "write" | "egress" | "load";
  /** A governed single call's operation (seed 001); `callId` is its journal operation id. Absent in a turn. */
  readonly operationId?: TrailValue;
  /** A governed single call's attempt of its operation. Absent in a turn. */
  readonly attemptId?: TrailValue;
}

export interface RoutingEvent extends Base {
  readonly trail: "routing";
  readonly kind: CallKind;
  readonly tier: Tier;
  readonly sensitivity: Sensitivity;
  readonly clientId: TrailValue;
  readonly model: TrailValue;
  readonly cacheTtl: CacheTtl | "off";
  readonly reasoning?: ReasoningEffort;
  /** The service tier the route asked for (written before egress). */
  readonly requestedTier?: ServiceTier;
  /** The tier the wire says served the call: present on the record written after settlement. */
  readonly servedTier?: ServiceTier;
  /** The upstream the wire says served the call (OpenRouter's `provider`): on the record written after settlement. */
  readonly upstream?: TrailValue;
  /** A refused call's category (closed, never the provider's text): on the record written after settlement. */
  readonly refusal?: RefusalCategory;
  readonly parentCallId?: TrailValue;
  /** A governed single call's operation (seed 001); `callId` is its journal operation id. Absent in a turn. */
  readonly operationId?: TrailValue;
  /** A governed single call's attempt of its operation. Absent in a turn. */
  readonly attemptId?: TrailValue;
}

export interface CostEvent extends Base {
  readonly trail: "cost";
  readonly operationId: TrailValue;
  readonly model: TrailValue;
  readonly usdMicros: number;
  /** The settlement's id; `none` on a refusal (nothing was settled). */
  readonly settlementId: TrailValue;
  /** The settled usage's input and output tokens (counts): on a settled call's first cost record. */
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly capsCrossed: readonly BudgetCapName[];
  readonly warning?: { readonly cap: BudgetCapName; readonly action: "warn" | "block" };
  readonly refused?: { readonly reason: "unpriced" | "cap"; readonly detail: TrailValue };
}

/**
 * Why a turn's recall is less than its source could give (closed): `unavailable` the source kept
 * failing or did not answer within `recallTimeoutMs` (nothing recalled); `invalid` its answer was
 * not a recall result (nothing recalled); `filtered` records of another scope or above the turn's
 * sensitivity were dropped; `truncated` records over the turn's bounds (counts, characters) were dropped.
 */
export type RecallDegradedTier = "unavailable" | "invalid" | "filtered" | "truncated";
export const RECALL_DEGRADED_TIERS: readonly RecallDegradedTier[] = Object.freeze([
  "unavailable",
  "invalid",
  "filtered",
  "truncated",
]);

/**
 * One turn's recall (before its first step): the source's name and what entered the request, by
 * count and size only (never the text, never the query). `items` is `episodes + facts`.
 */
export interface RecallEvent extends Base {
  readonly trail: "recall";
  readonly source: TrailValue;
  readonly items: number;
  readonly episodes?: number;
  readonly facts?: number;
  /** Characters (UTF-16 units) of the rendered recall block; 0 when nothing was recalled. */
  readonly characters?: number;
  /** `estimateTokens` of the rendered block (UTF-8 bytes / 4, rounded up). */
  readonly estimatedTokens?: number;
  /** Calls made to the source (1 unless it rejected and was called again). */
  readonly attempts?: number;
  /** Records the loop dropped (another scope, above the ceiling, over the bounds). */
  readonly dropped?: number;
  /** Absent or empty: recall was whole. */
  readonly degradedTiers?: readonly RecallDegradedTier[];
}

/**
 * What `step:pre` touched, honored or refused: field names only, never schema content. `warned` is
 * an observer's warning about the step (the cache-hygiene guard: `field` is `cache_hygiene:<cause>`).
 */
export interface ContextEvent extends Base {
  readonly trail: "context";
  readonly step: number;
  readonly field: TrailValue;
  readonly decision: "honored" | "refused" | "warned";
}

export type PolicyAction =
  | "intent"
  | "decision"
  | "permission.requested"
  | "permission.resolved"
  | "grant.used";
/** Which rule made a decision: the kernel's built-ins, or the host's controller. */
export type PolicyRule =
  | "kernel.registered"
  | "kernel.decision_invalid"
  | "kernel.decide_failed"
  | "controller"
  | "run_grant";
/** Why an ask was denied or not answered by an operator. */
export type PolicyReason =
  | "ask_expired"
  | "operator_denied"
  | "no_resolver"
  | "resolver_failed"
  | "resolver_timeout"
  /** The host stopped while the ask waited and asks were not durable: nobody decided. */
  | "shutdown"
  | "cancelled";
/**
 * A policy record. `authorization.action` is the action the tool's `authorize` derived (kept when
 * it is identifier-shaped, else hashed); `subject` is a keyed hash unless the tool declares
 * `nonSensitiveTrail` (and the default subject `*` stays `*`).
 */
export interface PolicyEvent extends Base {
  readonly trail: "policy";
  readonly action: PolicyAction;
  readonly tool: TrailValue;
  readonly authorization?: { readonly action: TrailValue; readonly subject: TrailValue };
  readonly decision?: "allow" | "ask" | "deny";
  readonly by?: "operator" | "kernel";
  readonly rule?: PolicyRule;
  readonly reason?: PolicyReason;
}

export type LifecycleAction =
  | "turn.started"
  | "model.request"
  | "model.response"
  | "tool.call"
  | "tool.result"
  | "budget.warning"
  | "turn.completed"
  | "turn.uncertain"
  /** The turn stopped at a permission ask and holds no process (issue 25). */
  | "turn.parked"
  /** A parked turn went on after its decision, in whichever process resumed it. */
  | "turn.resumed"
  /** The memory extraction after a completed turn: `detail` its closed outcome (`ExtractionOutcome` of the loop) and counts. */
  | "memory.extraction"
  /** One erasure (`createMemoryErasure`): of a session, a scope or one fact; its detail counts what went, never what it was. */
  | "erasure.completed";
export interface LifecycleEvent extends Base {
  readonly trail: "lifecycle";
  readonly action: LifecycleAction;
  readonly step?: number;
  readonly contextVersion?: number;
  readonly messageRevision?: number;
  /** A kind: the registered tool name (`unregistered` for a name the turn's tools do not have), a result code, a terminal reason, a cause. */
  readonly detail?: TrailValue;
}

export type AuditEvent =
  | AccessEvent
  | RoutingEvent
  | CostEvent
  | RecallEvent
  | ContextEvent
  | PolicyEvent
  | LifecycleEvent;

/** A stored audit event with its position in the log. */
export type AuditRecord = AuditEvent & { readonly seq: number };

export interface AuditQuery {
  /** The stored session pseudonym (`sessionPseudonym`); a host with the real id asks the runner's `trails`. */
  readonly sessionId?: TrailValue;
  readonly turnId?: string;
  readonly trail?: Trail;
  readonly cursor?: string;
  readonly limit?: number;
}

/**
 * Where trails are written is swappable; that they are written is not. `append` is awaited by the
 * engine in order; a rejection makes the turn uncertain and stops further effects. `query` reads a
 * scope's events in append order (default 100, at most 500), never another scope's.
 */
export interface AuditLog {
  append(event: AuditEvent): Promise<void>;
  query(
    scope: Scope,
    query?: AuditQuery,
  ): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }>;
}
