import {
  type AuthorizationIntent,
  type Clock,
  type JsonObject,
  type PolicyReason,
  type PolicyRule,
  type TrailValue,
  trailId,
} from "@alma-harness/core";
import { type AskDecision, attributed } from "./asks.js";
import { raceAbort } from "./cancel.js";
import type { RecordFields, Recorder } from "./recorder.js";

export type PermissionDecision = "allow" | "ask" | "deny";

export interface PermissionRequest {
  readonly turnId: string;
  readonly callId: string;
  readonly tool: string;
  readonly action: string;
  readonly subject: string;
  readonly input: JsonObject;
}

/**
 * Decides whether an admitted call may run. `decide` is the policy (`allow | ask | deny`); `resolve`
 * answers an `ask` (an operator), with the turn's signal; a missing, failed, cancelled or timed-out
 * resolver denies. Without a controller, registered tools are allowed by the built-in
 * `kernel.registered` rule, recorded like any decision.
 */
export interface PermissionController {
  decide(request: PermissionRequest): PermissionDecision | Promise<PermissionDecision>;
  /**
   * `true` is the operator's allow, `false` the operator's denial. A resolver that knows no person
   * decided (its host stopping, an ask it cannot show) answers an `AskDecision` by the kernel
   * with its reason (`shutdown`, `no_resolver`, ...), so the model never reads a person's denial
   * that no person gave. Anything else it answers is the kernel's `resolver_failed`.
   */
  resolve?(
    request: PermissionRequest,
    signal: AbortSignal,
  ): boolean | AskDecision | Promise<boolean | AskDecision>;
}

export interface FenceContext {
  /** The turn's recorder: the policy trail, the events, the durability point before host code. */
  readonly rec: Recorder;
  /** The resolver's timeout runs on it. */
  readonly clock: Clock;
  readonly controller: PermissionController | undefined;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** Run-scoped grants from allowed asks, keyed by action and subject. */
  readonly grants: Set<string>;
  /**
   * An `ask` parks the turn instead of waiting for the resolver: the request is durable, the
   * fence answers `parked`, and the decision comes back with the resumed turn (`resolvedAsk`).
   */
  readonly park: boolean;
}

export type FenceVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string }
  | { readonly parked: true };

type Recorded = { readonly action: TrailValue; readonly subject: TrailValue };

/** The policy trail's record of one call's authorization. */
function policyRecorder(rec: Recorder, request: PermissionRequest, recorded: Recorded) {
  const tool = trailId(request.tool);
  return (fields: Omit<RecordFields<"policy">, "tool" | "authorization">) =>
    rec.record("policy", { tool, authorization: recorded, ...fields }, request.callId);
}

/**
 * Policy before effect: the decision is made durable on the policy trail before anything else;
 * on `ask`, the request and the resolution are made durable around the resolver. Every audit append
 * is awaited: if one fails, this throws and the tool does not run. A hard deny is final; a grant
 * from an earlier allowed ask satisfies a later matching ask, never a deny.
 */
export async function permissionFence(
  ctx: FenceContext,
  request: PermissionRequest,
  recorded: Recorded,
): Promise<FenceVerdict> {
  const { rec } = ctx;
  const record = policyRecorder(rec, request, recorded);
  await record({ action: "intent" });
  if (ctx.controller) await rec.commit();
  const { decision, by, rule } = await decide(ctx, request);
  await record({ action: "decision", decision, by, rule });
  rec.emit({ type: "policy.decision", turnId: rec.turnId, callId: request.callId, decision, by });
  if (decision === "allow") return { allowed: true };
  if (decision === "deny") return { allowed: false, reason: "denied by policy" };

  const key = grantKey(request);
  if (ctx.grants.has(key)) {
    await record({ action: "grant.used", decision: "allow", by: "kernel", rule: "run_grant" });
    return { allowed: true };
  }
  await record({ action: "permission.requested", decision: "ask" });
  // The ask is shown to an operator and may wait long: it is durable first, and no write stays open.
  await rec.commit();
  rec.emit({
    type: "permission.requested",
    turnId: rec.turnId,
    callId: request.callId,
    action: request.action,
    subject: request.subject,
  });
  if (ctx.park) return { parked: true };
  return resolved(ctx, request, recorded, await askResolver(ctx, request));
}

/**
 * A parked ask's decision, as the resumed turn records it: `permission.resolved` with who decided
 * (an expiry is the kernel's, never an operator's) and, when allowed, the run grant. The intent,
 * the decision and the request were made durable when the turn parked.
 */
export function resolvedAsk(
  ctx: Pick<FenceContext, "rec" | "grants">,
  request: PermissionRequest,
  recorded: Recorded,
  decision: Answer,
): Promise<FenceVerdict> {
  return resolved(ctx, request, recorded, decision);
}

async function resolved(
  ctx: Pick<FenceContext, "rec" | "grants">,
  request: PermissionRequest,
  recorded: Recorded,
  answer: Answer,
): Promise<FenceVerdict> {
  const { rec } = ctx;
  await policyRecorder(
    rec,
    request,
    recorded,
  )({
    action: "permission.resolved",
    decision: answer.allowed ? "allow" : "deny",
    by: answer.by,
    ...(answer.reason ? { reason: answer.reason } : {}),
  });
  rec.emit({
    type: "permission.resolved",
    turnId: rec.turnId,
    callId: request.callId,
    allowed: answer.allowed,
    by: answer.by,
  });
  if (!answer.allowed)
    return { allowed: false, reason: REASON_TEXT[answer.reason ?? "operator_denied"] };
  ctx.grants.add(grantKey(request));
  return { allowed: true };
}

/** What the model reads of a denied ask (its tool result, not a trail): the trail keeps the closed reason. */
const REASON_TEXT: Readonly<Record<PolicyReason, string>> = {
  ask_expired: "the request for permission expired before anyone decided",
  shutdown: "the service stopped before anyone decided",
  operator_denied: "denied by the operator",
  no_resolver: "no permission resolver",
  resolver_failed: "resolver failed",
  resolver_timeout: "resolver timed out",
  cancelled: "cancelled",
};

/**
 * The decision, attributed: the built-in rule (no controller: a registered tool is allowed) and a
 * controller that failed or answered outside the vocabulary (deny, fail closed) are the kernel's;
 * a controller's answer is the operator's policy.
 */
async function decide(
  ctx: FenceContext,
  request: PermissionRequest,
): Promise<{ decision: PermissionDecision; by: "operator" | "kernel"; rule: PolicyRule }> {
  if (!ctx.controller) return { decision: "allow", by: "kernel", rule: "kernel.registered" };
  try {
    const controller = ctx.controller;
    const decision: unknown = await raceAbort(
      new Promise((resolve) => resolve(controller.decide(request))),
      ctx.signal,
    );
    if (decision === "allow" || decision === "ask" || decision === "deny")
      return { decision, by: "operator", rule: "controller" };
    return { decision: "deny", by: "kernel", rule: "kernel.decision_invalid" };
  } catch {
    return { decision: "deny", by: "kernel", rule: "kernel.decide_failed" };
  }
}

function grantKey(a: Pick<AuthorizationIntent, "action" | "subject">): string {
  return `${a.action}\u0000${a.subject}`;
}

type Answer = {
  readonly allowed: boolean;
  readonly by: "operator" | "kernel";
  readonly reason?: PolicyReason;
};

/** A resolver's answer as the trail attributes it (see `PermissionController.resolve`). */
function answerOf(value: unknown): Answer {
  if (value === true) return { allowed: true, by: "operator" };
  if (value === false) return { allowed: false, by: "operator", reason: "operator_denied" };
  if (value !== null && typeof value === "object") {
    const { allowed, by, reason } = value as Record<string, unknown>;
    const d = { allowed, by, ...(reason !== undefined ? { reason } : {}) };
    if (attributed(d)) return d;
  }
  return { allowed: false, by: "kernel", reason: "resolver_failed" };
}

async function askResolver(ctx: FenceContext, request: PermissionRequest): Promise<Answer> {
  const resolve = ctx.controller?.resolve;
  if (!resolve) return { allowed: false, by: "kernel", reason: "no_resolver" };
  if (ctx.signal.aborted) return { allowed: false, by: "kernel", reason: "cancelled" };
  const local = new AbortController();
  const onAbort = () => local.abort(ctx.signal.reason);
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  const timeout = ctx.clock.sleep(ctx.timeoutMs, local.signal).then(
    (): Answer => ({ allowed: false, by: "kernel", reason: "resolver_timeout" }),
    (): Answer => ({ allowed: false, by: "kernel", reason: "cancelled" }),
  );
  const answer = Promise.resolve()
    .then(() => resolve.call(ctx.controller, request, local.signal))
    .then(answerOf, (): Answer => ({ allowed: false, by: "kernel", reason: "resolver_failed" }));
  try {
    return await Promise.race([answer, timeout]);
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    local.abort();
  }
}
