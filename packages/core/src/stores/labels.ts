import { ValidationError } from "../errors.js";
import type { Scope } from "../scope.js";

export type SessionLabels = Readonly<Record<string, string>>;

const LABEL_KEY = /^[a-z][a-z0-9_]{0,31}$/;
const LABEL_VALUE = /^[A-Za-z0-9_.:-]{1,128}$/;

/** 1–8 entries; keys `^[a-z][a-z0-9_]{0,31}$`, values `^[A-Za-z0-9_.:-]{1,128}$`. Syntactic only. */
export function normalizeSessionLabels(labels: unknown): SessionLabels {
  if (labels === null || typeof labels !== "object" || Array.isArray(labels) || Object.getPrototypeOf(labels) !== Object.prototype) {
    throw new ValidationError("labels", "object", "labels must be a plain object");
  }
  const entries = Object.entries(labels);
  if (entries.length < 1 || entries.length > 8) throw new ValidationError("labels", "count_1_8", "labels must have 1-8 entries");
  const out: Record<string, string> = {};
  for (const [key, value] of entries.sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!LABEL_KEY.test(key)) throw new ValidationError(`labels.${key}`, "label_key", `label key "${key}" must match ${LABEL_KEY}`);
    if (typeof value !== "string" || !LABEL_VALUE.test(value)) {
      throw new ValidationError(`labels.${key}`, "label_value", `label ${key} must match ${LABEL_VALUE}`);
    }
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
