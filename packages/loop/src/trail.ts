import {
  isTrailShaped,
  type Scope,
  sessionPseudonym,
  type TrailKey,
  type TrailValue,
  trailHash,
  trailId,
  trailKind,
} from "@alma-harness/core";

/** The lifecycle and policy record of a tool name the turn's tools do not have: never the name the model wrote. */
export const UNREGISTERED_TOOL = trailKind("unregistered");

/**
 * One turn's trail values, derived once when the turn starts: the session's keyed pseudonym (the
 * session id itself is never on a trail), the turn id, and the keyed hash every sensitive value
 * goes through. Every trail writer of the loop builds its record from here.
 */
/** `trailKind`'s shape, tested without a throw on the hot path. */
const KIND_SHAPED = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;

export interface TurnTrail {
  readonly scope: Scope;
  readonly session: TrailValue;
  readonly turnId: TrailValue;
  /** A keyed, scope-bound hash (`trailHash`) of a value the trail may only hold hashed. */
  hash(value: string): TrailValue;
  /** A provider-issued call id: as it is when identifier-shaped, else its keyed hash (the same everywhere, so records still join). */
  callId(id: string): TrailValue;
  /** A value kept verbatim when identifier-shaped, else hashed: a non-sensitive subject or resource, a provider id. */
  idOrHash(value: string): TrailValue;
  /** A value kept verbatim when it is a vocabulary word (`trailKind`), else hashed: an authorization action. */
  kindOrHash(value: string): TrailValue;
}

export function turnTrail(
  key: TrailKey,
  scope: Scope,
  sessionId: string,
  turnId: string,
): TurnTrail {
  const hash = (value: string) => trailHash(key, scope, value);
  const idOrHash = (value: string) => (isTrailShaped(value) ? value : hash(value));
  const kindOrHash = (value: string) =>
    KIND_SHAPED.test(value) ? (value as TrailValue) : hash(value);
  return Object.freeze({
    scope,
    session: sessionPseudonym(key, scope, sessionId),
    turnId: trailId(turnId),
    hash,
    callId: idOrHash,
    idOrHash,
    kindOrHash,
  });
}

/** The fields every record of the turn shares, at `at` (two literals of the same key order, no spread: it heads every loop record). */
export function trailBase(
  trail: TurnTrail,
  at: number,
  callId?: string,
): {
  readonly scope: Scope;
  readonly sessionId: TrailValue;
  readonly turnId: TrailValue;
  readonly callId?: TrailValue;
  readonly at: number;
} {
  if (callId === undefined)
    return { scope: trail.scope, sessionId: trail.session, turnId: trail.turnId, at };
  return {
    scope: trail.scope,
    sessionId: trail.session,
    turnId: trail.turnId,
    callId: trail.callId(callId),
    at,
  };
}

/**
 * A cause, code or terminal reason as a trail kind. A value outside the kind shape (which only a
 * bug could produce) is recorded as `unknown`, never verbatim: the record still gets written.
 */
export function kindOrUnknown(value: string): TrailValue {
  try {
    return trailKind(value);
  } catch {
    return trailKind("unknown");
  }
}
