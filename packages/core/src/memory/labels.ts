import { type Scope, validateId } from "../scope.js";
import { SessionLabelConflictError, SessionLabelErasedError } from "../stores/errors.js";
import {
  normalizeSessionLabels,
  type SessionLabels,
  type SessionLabelStore,
} from "../stores/labels.js";
import { sameJson, scopeKey } from "../stores/rules.js";
import { type SessionMarker, sessionMarker } from "../stores/erasure.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

/**
 * The reference label store. A tombstone (one session) or a seal (a whole scope) is permanent:
 * once erased, `put` throws `SessionLabelErasedError` for good, so erasure cannot be undone by a
 * late write.
 */
export class InMemorySessionLabelStore implements SessionLabelStore, Erasable {
  readonly #labels = new Map<string, SessionLabels>();
  /** `scope mark` of every erased session (see `erasedSessionMark`): no session id is kept. */
  readonly #tombstones = new Set<string>();
  readonly #sealed = new Set<string>();
  readonly #marker: SessionMarker;

  constructor(marker: SessionMarker = sessionMarker()) {
    this.#marker = marker;
  }

  async put(scope: Scope, sessionId: string, labels: SessionLabels): Promise<SessionLabels> {
    const { key } = scopeKey(scope);
    const rowKey = `${key} ${validateId("sessionId", sessionId)}`;
    const normalized = normalizeSessionLabels(labels);
    if (this.#sealed.has(key) || this.#erased(scope, sessionId))
      throw new SessionLabelErasedError();
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
    if (this.#sealed.has(key) || this.#erased(scope, sessionId)) return undefined;
    return this.#labels.get(rowKey);
  }

  async erase(scope: Scope, sessionId?: string): Promise<void> {
    const { scope: s, key } = scopeKey(scope);
    if (sessionId === undefined) {
      this[ERASE]({ scope: s, key, marker: this.#marker });
      return;
    }
    const id = validateId("sessionId", sessionId);
    this[ERASE]({
      scope: s,
      key,
      session: { id, mark: this.#marker(s, id), audit: id },
      marker: this.#marker,
    });
  }

  /** One session: its labels dropped, a tombstone under its mark. The whole scope: sealed, every label dropped. */
  [ERASE](target: EraseTarget): number {
    if (target.session) this.#tombstones.add(`${target.key} ${target.session.mark}`);
    else this.#sealed.add(target.key);
    for (const rowKey of [...this.#labels.keys()]) {
      const id = rowKey.slice(target.key.length + 1);
      if (rowKey.startsWith(`${target.key} `) && covers(target, target.key, id)) {
        this.#labels.delete(rowKey);
        if (!target.session) this.#tombstones.add(`${target.key} ${markOf(target, id)}`);
      }
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#labels, this.#tombstones, this.#sealed];
  }

  #erased(scope: Scope, sessionId: string): boolean {
    return (
      this.#tombstones.size > 0 &&
      this.#tombstones.has(`${scopeKey(scope).key} ${this.#marker(scope, sessionId)}`)
    );
  }
}
