import { ValidationError } from "../errors.js";
import { REFUSAL_CATEGORIES } from "../model.js";
import { validateId } from "../scope.js";
import { type JsonValue, snapshotOnce } from "../snapshot.js";
import { isTrailShaped, TrailValueError } from "../trail.js";
import { type AuditEvent, RECALL_DEGRADED_TIERS, type Trail } from "./audit.js";
import {
  closedObject,
  decodeCursor,
  PAGE,
  pageLimit,
  scopeKey,
  validateCount,
  validateName,
  validateOneOf,
  validateTime,
} from "./rules.js";

/** The audit events and queries the stores accept, normalized once for every implementation (the trail rule checked again). */

const BASE_FIELDS = ["trail", "scope", "sessionId", "turnId", "callId", "at"];
const TRAIL_FIELDS: Readonly<Record<Trail, readonly string[]>> = {
  access: ["tool", "resource", "action", "operationId", "attemptId"],
  routing: [
    "kind",
    "tier",
    "sensitivity",
    "clientId",
    "model",
    "cacheTtl",
    "reasoning",
    "requestedTier",
    "servedTier",
    "upstream",
    "refusal",
    "parentCallId",
    "operationId",
    "attemptId",
  ],
  cost: [
    "operationId",
    "model",
    "usdMicros",
    "settlementId",
    "inputTokens",
    "outputTokens",
    "capsCrossed",
    "warning",
    "refused",
  ],
  recall: [
    "source",
    "items",
    "episodes",
    "facts",
    "characters",
    "estimatedTokens",
    "attempts",
    "dropped",
    "degradedTiers",
  ],
  context: ["step", "field", "decision"],
  policy: ["action", "tool", "authorization", "decision", "by", "rule", "reason"],
  lifecycle: ["action", "step", "contextVersion", "messageRevision", "detail"],
};
export const TRAILS = Object.keys(TRAIL_FIELDS) as readonly Trail[];
/** The field sets, built once: every trail's fields (the first check) and each trail's own. */
const ANY_TRAIL_FIELDS: ReadonlySet<string> = new Set([
  ...BASE_FIELDS,
  ...Object.values(TRAIL_FIELDS).flat(),
]);
const FIELDS_OF_TRAIL = new Map<string, ReadonlySet<string>>(
  TRAILS.map((t) => [t, new Set([...BASE_FIELDS, ...TRAIL_FIELDS[t]])]),
);

/** An audit event: closed per trail (a field the trail does not define is refused), snapshotted. */
export function normalizeAuditEvent(event: unknown): AuditEvent {
  const { e, trail } = closedEvent(event);
  const { scope } = scopeKey(e.scope);
  validateId("event.sessionId", e.sessionId);
  validateId("event.turnId", e.turnId);
  if (e.callId !== undefined) validateId("event.callId", e.callId);
  validateTime("event.at", e.at);
  if (e.refusal !== undefined) validateOneOf("event.refusal", e.refusal, REFUSAL_CATEGORIES);
  if (e.upstream !== undefined) validateName("event.upstream", e.upstream);
  if (trail === "recall") recallFields(e);
  for (const f of ["inputTokens", "outputTokens"])
    if (e[f] !== undefined) validateCount(`event.${f}`, e[f]);
  // The trail rule is checked on the snapshot's own walk; its first refusal is thrown once the copy
  // is whole, so a snapshot error still comes first, as when the copy was walked again.
  let refused: TrailValueError | undefined;
  const copy = snapshotOnce(event, undefined, (value, path) => {
    refused ??= trailRefusal(value, path);
  }) as Record<string, JsonValue>;
  if (refused !== undefined) throw refused;
  // The engine passes the normalized scope itself, which the snapshot keeps: nothing to replace.
  if ((copy.scope as unknown) === scope) return copy as unknown as AuditEvent;
  return Object.freeze({ ...copy, scope }) as unknown as AuditEvent;
}

/**
 * The event's fields, each in the set of every trail's fields, then its trail, then each field in
 * that trail's own set: the checks one by one, their reads in the same order and their errors, on
 * one read of the keys.
 */
function closedEvent(event: unknown): {
  readonly e: Record<string, unknown>;
  readonly trail: Trail;
} {
  if (event === null || typeof event !== "object" || Array.isArray(event))
    closedObject("event", event, ANY_TRAIL_FIELDS);
  const e = event as Record<string, unknown>;
  const keys = Object.keys(e);
  for (const key of keys)
    if (!ANY_TRAIL_FIELDS.has(key)) closedObject("event", event, ANY_TRAIL_FIELDS);
  const trail = validateOneOf("event.trail", e.trail, TRAILS);
  const own = FIELDS_OF_TRAIL.get(trail) as ReadonlySet<string>;
  for (const key of keys) if (!own.has(key)) closedObject("event", event, own);
  return { e, trail };
}

/** A recall record's counts are non-negative integers and its degraded tiers a closed list without repeats. */
function recallFields(e: Record<string, unknown>): void {
  validateCount("event.items", e.items);
  for (const f of ["episodes", "facts", "characters", "estimatedTokens", "attempts", "dropped"])
    if (e[f] !== undefined) validateCount(`event.${f}`, e[f]);
  const tiers = e.degradedTiers;
  if (tiers === undefined) return;
  if (!Array.isArray(tiers) || tiers.length > RECALL_DEGRADED_TIERS.length)
    throw new ValidationError(
      "event.degradedTiers",
      "array",
      "event.degradedTiers must be a list of recall tiers",
    );
  for (const [i, t] of tiers.entries())
    validateOneOf(`event.degradedTiers[${i}]`, t, RECALL_DEGRADED_TIERS);
  if (new Set(tiers).size !== tiers.length)
    throw new ValidationError(
      "event.degradedTiers",
      "unique",
      "event.degradedTiers repeats a tier",
    );
}

/**
 * The trail rule, checked where every store accepts an event, on what the snapshot kept at `path`:
 * each string has a trail value's shape (no spaces or control characters, at most 200). Nothing,
 * or the error naming the first field that breaks it, never the value.
 */
function trailRefusal(
  value: JsonValue,
  path: readonly (string | number)[],
): TrailValueError | undefined {
  const below = unshaped(value);
  if (below === undefined) return undefined;
  let at = "event";
  for (const part of [...path, ...below]) at += typeof part === "number" ? `[${part}]` : `.${part}`;
  return new TrailValueError(
    "identifier",
    `${at}: a trail holds identifiers, kinds, counts and hashes (1-200 printable ASCII characters without spaces)`,
  );
}

/** Where in `value` (keys and indexes, in order) its first string without a trail value's shape is; nothing when every one has it. */
function unshaped(value: JsonValue): (string | number)[] | undefined {
  if (typeof value === "string") return isTrailShaped(value) ? undefined : [];
  if (value === null || typeof value !== "object") return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const below = unshaped(value[i] as JsonValue);
      if (below !== undefined) return [i, ...below];
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const below = unshaped((value as Record<string, JsonValue>)[key] as JsonValue);
    if (below !== undefined) return [key, ...below];
  }
  return undefined;
}

/** A validated audit query: filters, page size and the position after which to read. */
export function normalizeAuditQuery(query: unknown): {
  readonly sessionId?: string;
  readonly turnId?: string;
  readonly trail?: Trail;
  readonly after?: number;
  readonly limit: number;
} {
  const q = closedObject("query", query ?? {}, ["sessionId", "turnId", "trail", "cursor", "limit"]);
  const after = decodeCursor(q.cursor, ["number"]);
  return {
    ...(q.sessionId === undefined ? {} : { sessionId: validateId("sessionId", q.sessionId) }),
    ...(q.turnId === undefined ? {} : { turnId: validateId("turnId", q.turnId) }),
    ...(q.trail === undefined ? {} : { trail: validateOneOf("trail", q.trail, TRAILS) }),
    ...(after === undefined ? {} : { after: after[0] as number }),
    limit: pageLimit(q.limit, PAGE.audit.def, PAGE.audit.max),
  };
}
