import type { Sensitivity, Tier } from "./routing.js";
import type { JsonObject } from "./snapshot.js";
import type { Usage } from "./usage.js";

/** One tool-free child call on its own route. A supplied `toolChoice` is rejected. */
export interface DirectRequest {
  readonly tier: Tier;
  readonly sensitivity: Sensitivity;
  readonly prompt: string;
  readonly system?: string;
  readonly maxOutputTokens?: number;
}

/** A child agent run on a narrowed grant: at most the parent's tools, never search or provider tools. */
export interface DelegateRequest {
  readonly tier: Tier;
  readonly sensitivity: Sensitivity;
  readonly prompt: string;
  readonly system?: string;
  readonly tools?: readonly string[];
  readonly maxSteps?: number;
}

export type DelegateRefusalReason = "depth" | "sensitivity" | "tool_grant";

export interface DelegateCompleted {
  readonly status: "completed";
  readonly text: string;
  readonly usage: Usage;
}
export interface DelegateRefused {
  readonly status: "refused";
  readonly reason: DelegateRefusalReason;
}
export type DelegateAttempt = DelegateCompleted | DelegateRefused;

/** The model gateways a live handler may use; revoked when the handler settles. */
export interface ModelGateways {
  direct(request: DirectRequest): Promise<{ readonly text: string; readonly usage: Usage }>;
  /** Throws `DelegationRefusedError` on refusal. */
  delegate(request: DelegateRequest): Promise<DelegateCompleted>;
  /** Returns a frozen refusal instead of throwing; returning that exact object emits an error result. */
  tryDelegate(request: DelegateRequest): Promise<DelegateAttempt>;
}

/**
 * What a handler may know: the turn's ids, the host's facts (never the scope), its signal and the
 * gateways. Everything is a frozen snapshot.
 */
export interface ToolContext {
  readonly turnId: string;
  readonly callId: string;
  readonly sessionId: string;
  readonly toolName: string;
  /**
   * A key the runtime mints for this call, the same in every run of the turn (a resume after a
   * park, a replay after a crash): pass it to the outside system so the effect happens once.
   */
  readonly effectKey: string;
  /** Facts the host passes to tools (for example a clinic id); never secrets it did not pass. */
  readonly facts: JsonObject;
  readonly signal: AbortSignal;
  readonly depth: number;
  now(): number;
  readonly models: ModelGateways;
}
