import { ValidationError } from "../errors.js";
import type { Scope } from "../scope.js";
import { type JsonObject, snapshot } from "../snapshot.js";

export type SessionLabels = Readonly<Record<string, string>>;

const LABEL_KEY = /^[a-z][a-z0-9_]{0,31}$/;
const LABEL_VALUE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Labels are small: eight short entries fit well inside these bounds, so a bigger input is refused unread. */
const LABEL_LIMITS = Object.freeze({
  maxDepth: 1,
  maxNodes: 9,
  maxStringBytes: 128,
  maxTotalBytes: 8 * (32 + 128),
});

/**
 * 1–8 entries; keys `^[a-z][a-z0-9_]{0,31}$`, values `^[A-Za-z0-9_.:-]{1,128}$`. Syntactic only.
 * The bounded snapshot reads the input first, so a getter is never called, a Proxy is refused before
 * any trap runs, and a symbol or hidden key is a rejection rather than silently dropped (each a
 * `SnapshotError`). Errors name the rule, never the key or value that broke it.
 */
export function normalizeSessionLabels(labels: unknown): SessionLabels {
  if (labels === null || typeof labels !== "object" || Array.isArray(labels))
    throw new ValidationError("labels", "object", "labels must be a plain object");
  const copy = snapshot(labels, LABEL_LIMITS) as JsonObject;
  const entries = Object.entries(copy);
  if (entries.length < 1 || entries.length > 8)
    throw new ValidationError("labels", "count_1_8", "labels must have 1-8 entries");
  const out: Record<string, string> = {};
  for (const [key, value] of entries.sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!LABEL_KEY.test(key))
      throw new ValidationError("labels", "label_key", `label keys must match ${LABEL_KEY}`);
    if (typeof value !== "string" || !LABEL_VALUE.test(value))
      throw new ValidationError("labels", "label_value", `label values must match ${LABEL_VALUE}`);
    out[key] = value;
  }
  return Object.freeze(out);
}

/**
 * A host's attribution for a session, apart from receipts so erasure can sever it. Guarantees:
 * `put` stores once (an equal replay returns the labels, different labels throw
 * `SessionLabelConflictError`); `erase(scope, sessionId)` tombstones one session and
 * `erase(scope)` seals the whole scope; either makes a later `put` throw `SessionLabelErasedError`.
 */
export interface SessionLabelStore {
  put(scope: Scope, sessionId: string, labels: SessionLabels): Promise<SessionLabels>;
  get(scope: Scope, sessionId: string): Promise<SessionLabels | undefined>;
  erase(scope: Scope, sessionId?: string): Promise<void>;
}
