import { type ModelJobItem, type Scope, sessionPseudonym, type TrailKey } from "@alma-harness/core";
import type { DeferredTicket } from "@alma-harness/execution";

/** Every item of a job is one governed call of this kind: one-call work outside a turn (its trail says `requestedTier: batch`). */
export const JOB_CALL_KIND = "direct" as const;

/** The identity of item `customId` of job `jobId`: stable, so a retry can never claim it twice. */
export function itemIdentity(
  scope: Scope,
  jobId: string,
  customId: string,
  sessionId: string,
  key: TrailKey,
) {
  return Object.freeze({
    scope,
    sessionId,
    trailSession: sessionPseudonym(key, scope, sessionId),
    rootKey: `job:${jobId}`,
    turnId: jobId,
    operationId: `${jobId}:${customId}`,
    kind: JOB_CALL_KIND,
  });
}

/** What the job store keeps of a claimed item: the ticket's plain data, nothing of its content. */
export function itemOfTicket(customId: string, ticket: DeferredTicket): ModelJobItem {
  const { identity } = ticket;
  return Object.freeze({
    customId,
    operationId: identity.operationId,
    sessionId: identity.sessionId,
    rootKey: identity.rootKey,
    turnId: identity.turnId,
    kind: identity.kind,
    choice: ticket.choice,
    route: { tier: ticket.route.tier, sensitivity: ticket.route.sensitivity },
    fenceToken: ticket.fenceToken,
    worstMicros: ticket.worstMicros,
    claimedAt: ticket.claimedAt,
    ...(ticket.before !== undefined ? { before: ticket.before } : {}),
  });
}

/** The ticket again, in any process, from the stored item (the trail pseudonym derived from the deployment's key). */
export function ticketOfItem(scope: Scope, item: ModelJobItem, key: TrailKey): DeferredTicket {
  return Object.freeze({
    identity: Object.freeze({
      scope,
      sessionId: item.sessionId,
      trailSession: sessionPseudonym(key, scope, item.sessionId),
      rootKey: item.rootKey,
      turnId: item.turnId,
      operationId: item.operationId,
      kind: item.kind,
    }),
    choice: item.choice,
    route: item.route,
    fenceToken: item.fenceToken,
    worstMicros: item.worstMicros,
    claimedAt: item.claimedAt,
    ...(item.before !== undefined ? { before: item.before } : {}),
  });
}
