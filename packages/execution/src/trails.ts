import {
  type AuditEvent,
  type AuditLog,
  type CostEvent,
  type CostReceipt,
  isTrailShaped,
  type ModelChoice,
  type RefusalCategory,
  type RoutingEvent,
  type TrailValue,
  trailId,
  trailJoin,
  trailKind,
} from "@alma-harness/core";
import type { Ledger } from "./account.js";
import { UncertainCallError } from "./errors.js";
import type { CallIdentity, CallOptions } from "./types.js";

/** What the trails read of a call's options: its route, and a main step's lifecycle position. */
export type RouteOptions = Pick<CallOptions, "route" | "lifecycle">;

/** Every trail event is awaited; a sink that fails makes the call uncertain (`audit`) and stops what follows. */
export async function durable(audit: AuditLog, event: AuditEvent): Promise<void> {
  try {
    await audit.append(event);
  } catch (error) {
    throw new UncertainCallError("audit", `the ${event.trail} trail could not be written`, error);
  }
}

/** The fields every record of the call shares: the session's pseudonym, never its id. */
function baseOf(identity: CallIdentity, at: number) {
  return {
    scope: identity.scope,
    sessionId: identity.trailSession,
    turnId: trailId(identity.turnId),
    callId: trailId(identity.operationId),
    at,
  };
}

/** A single call's operation and attempt (`CallIdentity.operation`), as trail values; nothing for a turn's call. */
function operationOf(identity: CallIdentity): {
  readonly operationId?: TrailValue;
  readonly attemptId?: TrailValue;
} {
  const op = identity.operation;
  return op === undefined
    ? {}
    : { operationId: trailId(op.operationId), attemptId: trailId(op.attemptId) };
}

/**
 * The routing record, field by field in the order its records have always had (no object spreads:
 * two records per call, the second extending the first).
 */
function routingBase(
  identity: CallIdentity,
  choice: ModelChoice,
  options: RouteOptions,
  at: number,
): Writable<RoutingEvent> {
  const route = options.route;
  const event = baseOf(identity, at) as Writable<RoutingEvent>;
  const op = identity.operation;
  if (op !== undefined) {
    event.operationId = trailId(op.operationId);
    event.attemptId = trailId(op.attemptId);
  }
  event.trail = "routing";
  event.kind = identity.kind;
  event.tier = route.tier;
  event.sensitivity = route.sensitivity;
  event.clientId = trailId(choice.clientId);
  event.model = trailId(choice.model);
  event.cacheTtl = choice.cache === false ? "off" : choice.cache.ttl;
  if (choice.reasoning) event.reasoning = choice.reasoning;
  if (choice.serviceTier) event.requestedTier = choice.serviceTier;
  if (route.parentCallId) event.parentCallId = route.parentCallId;
  return event;
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Before egress: the routing record; for a main step the lifecycle `model.request` record; for a
 * single call (`identity.operation`) its egress on the access trail, by provider and message count.
 */
export async function requestTrails(
  audit: AuditLog,
  identity: CallIdentity,
  choice: ModelChoice,
  options: RouteOptions,
  at: number,
  provider: string,
  messages: number,
): Promise<void> {
  await durable(audit, routingBase(identity, choice, options, at));
  if (identity.operation !== undefined) {
    await durable(audit, {
      ...baseOf(identity, at),
      ...operationOf(identity),
      trail: "access",
      tool: trailKind("model"),
      resource: trailJoin(
        trailKind("provider"),
        trailId(provider),
        trailKind("messages"),
        messages,
      ),
      action: "egress",
    });
  }
  const step = options.lifecycle;
  if (step === undefined) return;
  await durable(audit, {
    ...baseOf(identity, at),
    trail: "lifecycle",
    action: "model.request",
    step: step.step,
    contextVersion: step.contextVersion,
    messageRevision: step.messageRevision,
  });
}

/** What the wire said about a settled call beyond its usage: the serving upstream, a refusal's category. */
export interface ServedFacts {
  readonly upstream?: string;
  readonly refusal?: RefusalCategory;
}

/**
 * After settlement: the routing trail's second record, the tier the wire says served the call
 * (pricing followed it), the upstream that served it when the wire names one, and a refusal's
 * closed category.
 */
export async function servedTrail(
  audit: AuditLog,
  identity: CallIdentity,
  choice: ModelChoice,
  options: RouteOptions,
  receipt: CostReceipt,
  at: number,
  facts: ServedFacts = {},
): Promise<void> {
  const event = routingBase(identity, choice, options, at);
  event.servedTier = receipt.serviceTier;
  // The upstream is the wire's word: kept only when it has an identifier's shape (a slug).
  if (isTrailShaped(facts.upstream)) event.upstream = facts.upstream;
  if (facts.refusal !== undefined) event.refusal = facts.refusal;
  await durable(audit, event);
}

/** The cost event of a call: who and what, at what price, under which settlement. */
function costEvent(
  identity: CallIdentity,
  at: number,
  receipt: Pick<CostReceipt, "model" | "usdMicros" | "settlementId" | "capsCrossed">,
): CostEvent {
  return {
    trail: "cost",
    ...baseOf(identity, at),
    operationId: trailId(identity.operationId),
    model: trailId(receipt.model),
    usdMicros: receipt.usdMicros,
    settlementId: trailId(receipt.settlementId),
    capsCrossed: receipt.capsCrossed,
  };
}

/** The settlement id of a refusal's cost record: nothing was settled. */
const NO_SETTLEMENT = trailKind("none");

/** A call refused before anything was claimed or sent: one cost event at zero, with the reason. */
export async function refusedTrail(
  audit: AuditLog,
  identity: CallIdentity,
  choice: ModelChoice,
  at: number,
  reason: "unpriced" | "cap",
  detail: TrailValue,
): Promise<void> {
  await durable(audit, {
    ...costEvent(identity, at, {
      model: choice.model,
      usdMicros: 0,
      settlementId: NO_SETTLEMENT,
      capsCrossed: [],
    }),
    refused: { reason, detail },
  });
}

/** One cost event per receipt; a cap crossed for the first time in the turn adds its warning. */
export async function costTrail(
  audit: AuditLog,
  identity: CallIdentity,
  receipt: CostReceipt,
  books: Ledger,
  actions: (cap: CostReceipt["capsCrossed"][number]) => "block" | "warn",
  at: number,
): Promise<void> {
  const base: CostEvent = {
    ...costEvent(identity, at, receipt),
    inputTokens: receipt.usage.inputTokens,
    outputTokens: receipt.usage.outputTokens,
  };
  const fresh = receipt.capsCrossed.filter((cap) => !books.warned.has(cap));
  for (const cap of fresh) books.warned.add(cap);
  const events: CostEvent[] =
    fresh.length === 0
      ? [base]
      : fresh.map((cap, i) => ({
          ...base,
          ...(i === 0 ? {} : { usdMicros: 0, inputTokens: 0, outputTokens: 0 }),
          warning: { cap, action: actions(cap) },
        }));
  for (const event of events) await durable(audit, event);
}
