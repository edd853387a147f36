import type { BudgetCapName, CallKind } from "../caps.js";
import type { RefusalCategory } from "../model.js";
import type { CacheTtl, ReasoningEffort, Sensitivity, ServiceTier, Tier } from "../routing.js";
import type { Scope } from "../scope.js";

export type Trail = "access" | "routing" | "cost" | "recall" | "context" | "policy" | "lifecycle";

interface Base {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly turnId: string;
  readonly callId?: string;
  readonly at: number;
}

/** A resource a turn touched: by tool, media egress (kind and size, never URI), search results (count, never query). */
export interface AccessEvent extends Base {
  readonly trail: "access";
  readonly tool: string;
  readonly resource: string;
  readonly action: "read" | "write" | "egress" | "load";
}

export interface RoutingEvent extends Base {
  readonly trail: "routing";
  readonly kind: CallKind;
  readonly tier: Tier;
  readonly sensitivity: Sensitivity;
  readonly clientId: string;
  readonly model: string;
  readonly cacheTtl: CacheTtl | "off";
  readonly reasoning?: ReasoningEffort;
  /** The service tier the route asked for (written before egress). */
  readonly requestedTier?: ServiceTier;
  /** The tier the wire says served the call: present on the record written after settlement. */
  readonly servedTier?: ServiceTier;
  /** The upstream the wire says served the call (OpenRouter's `provider`): on the record written after settlement. */
  readonly upstream?: string;
  /** A refused call's category (closed, never the provider's text): on the record written after settlement. */
  readonly refusal?: RefusalCategory;
  readonly parentCallId?: string;
}

export interface CostEvent extends Base {
  readonly trail: "cost";
  readonly operationId: string;
  readonly model: string;
  readonly usdMicros: number;
  readonly settlementId: string;
  readonly capsCrossed: readonly BudgetCapName[];
  readonly warning?: { readonly cap: BudgetCapName; readonly action: "warn" | "block" };
  readonly refused?: { readonly reason: "unpriced" | "cap"; readonly detail: string };
}

export interface RecallEvent extends Base {
  readonly trail: "recall";
  readonly source: string;
  readonly items: number;
}

/** What `step:pre` touched, honored or refused: field names only, never schema content. */
export interface ContextEvent extends Base {
  readonly trail: "context";
  readonly step: number;
  readonly field: string;
  readonly decision: "honored" | "refused";
}

export type PolicyAction = "intent" | "decision" | "permission.requested" | "permission.resolved" | "grant.used";
export interface PolicyEvent extends Base {
  readonly trail: "policy";
  readonly action: PolicyAction;
  readonly tool: string;
  readonly authorization?: { readonly action: string; readonly subject: string };
  readonly decision?: "allow" | "ask" | "deny";
  readonly by?: "operator" | "kernel";
  readonly rule?: string;
  readonly reason?: string;
}

export type LifecycleAction =
  | "turn.started"
  | "model.request"
  | "model.response"
  | "tool.call"
  | "tool.result"
  | "budget.warning"
  | "turn.completed"
  | "turn.uncertain";
export interface LifecycleEvent extends Base {
  readonly trail: "lifecycle";
  readonly action: LifecycleAction;
  readonly step?: number;
  readonly contextVersion?: number;
  readonly messageRevision?: number;
  readonly detail?: string;
}

export type AuditEvent = AccessEvent | RoutingEvent | CostEvent | RecallEvent | ContextEvent | PolicyEvent | LifecycleEvent;

/** A stored audit event with its position in the log. */
export type AuditRecord = AuditEvent & { readonly seq: number };

export interface AuditQuery {
  readonly sessionId?: string;
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
  query(scope: Scope, query?: AuditQuery): Promise<{ readonly items: readonly AuditRecord[]; readonly nextCursor?: string }>;
}
