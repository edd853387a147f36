import { CALL_KINDS, type CallKind } from "../caps.js";
import { ValidationError } from "../errors.js";
import { type Scope, validateId } from "../scope.js";
import { snapshot } from "../snapshot.js";
import type { Usage } from "../usage.js";
import { type SessionMarker, sessionMarker } from "./erasure.js";
import { normalizeUsage } from "./normalize.js";
import {
  closedObject,
  decodeCursor,
  encodeCursor,
  PAGE,
  pageLimit,
  sameJson,
  scopeKey,
  validateOneOf,
  validateTime,
} from "./rules.js";

/**
 * Where a late observation came from, a closed vocabulary a host reads:
 * - `stream_after_timeout`: the call's stream went on after its round timed out (`call:<kind>:aborted`);
 * - `stream_after_deadline`: after the turn's deadline or its answer-by time cut it;
 * - `stream_after_cancel`: after the turn was cancelled;
 * - `stream_after_fence`: after the call's journal record was fenced (the sweep, an erasure);
 * - `provider_report`: the provider's own usage report (a billing export, a usage API), given by the host.
 */
export type LateUsageSource =
  | "stream_after_timeout"
  | "stream_after_deadline"
  | "stream_after_cancel"
  | "stream_after_fence"
  | "provider_report";
export const LATE_USAGE_SOURCES: readonly LateUsageSource[] = Object.freeze([
  "stream_after_timeout",
  "stream_after_deadline",
  "stream_after_cancel",
  "stream_after_fence",
  "provider_report",
]);

/** `known`: counts and attribution known (a priced call would use them); `unpriced`: counts known, attribution unresolved. */
export type LateUsageAttribution = "known" | "unpriced";
export const LATE_USAGE_ATTRIBUTIONS: readonly LateUsageAttribution[] = Object.freeze([
  "known",
  "unpriced",
]);

/**
 * One authoritative usage observation that arrived after its call was made uncertain or fenced.
 * Content-free: ids, a kind, a model, counts, a source and a time. Its identity is
 * `(scope, operationId, source)`: a call has at most one observation per source.
 */
export interface UsageObservation {
  readonly scope: Scope;
  /** The session's id; after an erasure of the session, its `erasedSessionMark`. */
  readonly sessionId: string;
  readonly rootKey: string;
  readonly turnId: string;
  /** The call's identity (the journal's operation id; a governed call's call id). */
  readonly operationId: string;
  readonly kind: CallKind;
  readonly clientId: string;
  readonly model: string;
  readonly attribution: LateUsageAttribution;
  readonly usage: Usage;
  readonly source: LateUsageSource;
  /** Epoch ms when the observation was made (the first recording's; a replay keeps it). */
  readonly observedAt: number;
}

/** What `record` did: `recorded` a new observation, or `replayed` an equal one already kept (the stored record is returned). */
export interface UsageRecordResult {
  readonly status: "recorded" | "replayed";
  readonly observation: UsageObservation;
}

export interface UsageInboxQuery {
  /** Only this session's observations (by its id; an erased session's are under its mark). */
  readonly sessionId?: string;
  readonly cursor?: string;
  /** 1–100, default 50. */
  readonly limit?: number;
}

export interface UsageInboxPage {
  readonly items: readonly UsageObservation[];
  readonly nextCursor?: string;
}

/**
 * The scoped inbox of late authoritative usage (seed 001, "UsageInbox"). Guarantees:
 * - `record` keeps one observation per `(scope, operationId, source)`: an equal one again (every
 *   field but `observedAt`, a session id equal to the stored one or to the mark it became) is
 *   `replayed` and returns the stored record; a different one throws `UsageObservationConflictError`.
 *   Concurrent equal records store one.
 * - Input is validated before any I/O (closed record, ids 1–200 printable ASCII, usage counters
 *   safe non-negative integers, closed `kind`/`attribution`/`source`): bad input is a typed
 *   `ValidationError`, `InvalidScopeError` or `InvalidIdError`, even on a closed store.
 * - `list` reads one scope, ascending by `(observedAt, operationId, source)`, with an opaque cursor.
 * - It grants no dispatch or billing authority: nothing reads it to settle, price, count toward a cap,
 *   change a receipt, the journal or a stored turn. It is evidence for the operator.
 * - Erasure (`SessionErasure`) replaces the session id by its mark, as for receipts.
 */
export interface UsageInbox {
  record(observation: UsageObservation): Promise<UsageRecordResult>;
  list(scope: Scope, query?: UsageInboxQuery): Promise<UsageInboxPage>;
}

const FIELDS = [
  "scope",
  "sessionId",
  "rootKey",
  "turnId",
  "operationId",
  "kind",
  "clientId",
  "model",
  "attribution",
  "usage",
  "source",
  "observedAt",
] as const;
/** An observation is small: twelve fields, ids of 200 characters, a usage record of a dozen counters. */
const LIMITS = Object.freeze({
  maxDepth: 3,
  maxNodes: 64,
  maxStringBytes: 256,
  maxTotalBytes: 8 * 1024,
});
const QUERY_FIELDS = ["sessionId", "cursor", "limit"] as const;

/** The record validated and frozen, with its scope's key; every store calls it before any I/O. */
export function normalizeUsageObservation(input: unknown): {
  readonly observation: UsageObservation;
  readonly key: string;
} {
  // Read once through the bounded snapshot: a getter never runs, a Proxy or a cycle is refused (`SnapshotError`).
  const o = closedObject("observation", snapshot(input, LIMITS), FIELDS);
  const { scope, key } = scopeKey(o.scope);
  const observation: UsageObservation = Object.freeze({
    scope,
    sessionId: validateId("sessionId", o.sessionId),
    rootKey: validateId("rootKey", o.rootKey),
    turnId: validateId("turnId", o.turnId),
    operationId: validateId("operationId", o.operationId),
    kind: validateOneOf("kind", o.kind, CALL_KINDS),
    clientId: validateId("clientId", o.clientId),
    model: validateId("model", o.model),
    attribution: validateOneOf("attribution", o.attribution, LATE_USAGE_ATTRIBUTIONS),
    usage: normalizeUsage(o.usage),
    source: validateOneOf("source", o.source, LATE_USAGE_SOURCES),
    observedAt: validateTime("observedAt", o.observedAt),
  });
  return Object.freeze({ observation, key });
}

/** A listing's validated query: the scope's key, the session filter, the page size and the decoded cursor. */
export function normalizeUsageInboxQuery(
  scope: unknown,
  query: unknown = {},
): {
  readonly scope: Scope;
  readonly key: string;
  readonly sessionId?: string;
  readonly limit: number;
  readonly after?: readonly [number, string, string];
} {
  const { scope: s, key } = scopeKey(scope);
  const q = closedObject("query", query, QUERY_FIELDS);
  const limit = pageLimit(q.limit, PAGE.usageInbox.def, PAGE.usageInbox.max);
  const after = decodeCursor(q.cursor, ["number", "string", "string"]) as
    | readonly [number, string, string]
    | undefined;
  const sessionId = q.sessionId === undefined ? undefined : validateId("sessionId", q.sessionId);
  return {
    scope: s,
    key,
    limit,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(after !== undefined ? { after } : {}),
  };
}

/** The sort key of an observation, as the cursor carries it. */
export function usageObservationKey(o: UsageObservation): readonly [number, string, string] {
  return [o.observedAt, o.operationId, o.source];
}

export function usageInboxCursor(o: UsageObservation): string {
  return encodeCursor(usageObservationKey(o));
}

/**
 * Whether `incoming` repeats `stored`: every field but `observedAt` equal, the session id equal to
 * the stored one or to the mark the stored one became when the session was erased (`marker`: the
 * store set's, keyed by its trail key).
 */
export function sameUsageObservation(
  stored: UsageObservation,
  incoming: UsageObservation,
  marker: SessionMarker = sessionMarker(),
): boolean {
  const { observedAt: _a, sessionId: s1, ...a } = stored;
  const { observedAt: _b, sessionId: s2, ...b } = incoming;
  if (s1 !== s2 && s1 !== marker(incoming.scope, s2)) return false;
  return sameJson(a, b);
}

/** The stored JSON of an observation (everything but the scope, which its row keys). */
export function usageObservationText(o: UsageObservation): string {
  const { scope: _s, ...rest } = o;
  return JSON.stringify({ v: 1, ...rest });
}

/** An observation read back from its row's JSON (version 1) and its scope. */
export function usageObservationFromText(scope: Scope, text: string): UsageObservation {
  const parsed = JSON.parse(text) as { v?: unknown } & Omit<UsageObservation, "scope">;
  if (parsed.v !== 1)
    throw new ValidationError(
      "record",
      "record_version",
      "a usage observation row has an unknown version",
    );
  const { v: _v, ...rest } = parsed;
  return normalizeUsageObservation({ scope, ...rest }).observation;
}
