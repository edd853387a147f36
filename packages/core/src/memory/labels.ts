import { type Scope, validateId } from "../scope.js";
import { SessionLabelConflictError, SessionLabelErasedError } from "../stores/errors.js";
import { normalizeSessionLabels, type SessionLabels, type SessionLabelStore } from "../stores/labels.js";
import { sameJson, scopeKey } from "../stores/rules.js";

/**
 * The reference label store. A tombstone (one session) or a seal (a whole scope) is permanent:
 * once erased, `put` throws `SessionLabelErasedError` for good, so erasure cannot be undone by a
 * late write.
 */
export class InMemorySessionLabelStore implements SessionLabelStore {
  readonly #labels = new Map<string, SessionLabels>();
  readonly #tombstones = new Set<string>();
  readonly #sealed = new Set<string>();

  async put(scope: Scope, sessionId: string, labels: SessionLabels): Promise<SessionLabels> {
    const { key } = scopeKey(scope);
    const rowKey = `${key} ${validateId("sessionId", sessionId)}`;
    const normalized = normalizeSessionLabels(labels);
    if (this.#sealed.has(key) || this.#tombstones.has(rowKey)) throw new SessionLabelErasedError();
    const existing = this.#labels.get(rowKey);
    if (existing) {
      if (sameJson(existing, normalized)) return existing;
      throw new SessionLabelConflictError();
    }
    this.#labels.set(rowKey, normalized);
    return normalized;
  }

  async get(scope: Scope, sessionId: string): Promise<SessionLabels | undefined> {
    const { key } = scopeKey(scope);
    const rowKey = `${key} ${validateId("sessionId", sessionId)}`;
    if (this.#sealed.has(key) || this.#tombstones.has(rowKey)) return undefined;
    return this.#labels.get(rowKey);
  }

  async erase(scope: Scope, sessionId?: string): Promise<void> {
    const { key } = scopeKey(scope);
    if (sessionId === undefined) {
      this.#sealed.add(key);
      for (const rowKey of this.#labels.keys()) if (rowKey.startsWith(`${key} `)) this.#labels.delete(rowKey);
      return;
    }
    const rowKey = `${key} ${validateId("sessionId", sessionId)}`;
    this.#tombstones.add(rowKey);
    this.#labels.delete(rowKey);
  }
}
