import {
  type AuditLog,
  type ErasureReport,
  type MemoryErasure,
  normalizeScope,
  type ProfileStore,
  type Scope,
  type SessionErasure,
  sessionPseudonym,
  type TrailKey,
  type TrailKeyMaterial,
  type TrailValue,
  trailJoin,
  trailKey,
  trailKind,
  validateId,
} from "@alma-harness/core";

/**
 * A store set's `SessionErasure` that also erases memory, for a set whose erasure does not cover
 * the memory stores itself (the in-memory composition: core's stores and the memory stores are two
 * packages). Memory goes first: if the rest fails, nothing is recallable any more and running the
 * erasure again finishes it (both halves are idempotent). The SQL store sets need none of this:
 * their `SessionErasure` deletes the memory rows in its own transaction.
 */
export function coverMemory(erasure: SessionErasure, memory: MemoryErasure): SessionErasure {
  return Object.freeze({
    async eraseSession(
      scope: Scope,
      sessionId: string,
      opts: { readonly auditSessionId: string },
    ): Promise<ErasureReport> {
      // Every argument checked before either half runs: a bad one erases nothing.
      const s = normalizeScope(scope);
      const id = validateId("sessionId", sessionId);
      const audit = validateId("auditSessionId", opts?.auditSessionId);
      await memory.eraseMemory({ scope: s, sessionId: id });
      const report = await erasure.eraseSession(s, id, { auditSessionId: audit });
      // Once more after the tombstone: a put that passed its erased-session check before it is gone too.
      await memory.eraseMemory({ scope: s, sessionId: id });
      return report;
    },
    async eraseScope(scope: Scope): Promise<ErasureReport> {
      const s = normalizeScope(scope);
      await memory.eraseMemory({ scope: s });
      const report = await erasure.eraseScope(s);
      await memory.eraseMemory({ scope: s });
      return report;
    },
  });
}

/** What one erasure did: the memory records it removed, and the turns or event batches it fenced (see `SessionErasure`). */
export interface MemoryErasureOutcome extends ErasureReport {
  /** `session`, `scope` (everything of the person), `memory` (the person's memory alone) or `fact` (one fact). */
  readonly target: "session" | "scope" | "memory" | "fact";
  readonly episodes: number;
  readonly facts: number;
}

export interface MemoryErasureOptions {
  /**
   * The store set's seams, as a composition hands them out: `erasure` (sessions, labels, admissions,
   * spend, audit, and both result namespaces — step results and root results — in one transaction
   * where the store allows), `memoryErasure` (episodes and facts) and `audit` (where the one
   * erasure event is written). Passing the set's own `SessionErasure` is what covers both result
   * namespaces: a single results handle cannot.
   */
  readonly stores: {
    readonly erasure: SessionErasure;
    readonly memoryErasure: MemoryErasure;
    readonly profiles: ProfileStore;
    readonly audit: AuditLog;
  };
  /** The runner's trail key: the audit part of the erasure finds the events the session's turns wrote under its pseudonym. */
  readonly trailKey: TrailKey | TrailKeyMaterial;
  readonly now?: () => number;
}

/** One erasure of a person's memory and conversations: a session of a scope, or the whole scope. */
export interface MemoryHostErasure {
  eraseSession(scope: Scope, sessionId: string): Promise<MemoryErasureOutcome>;
  eraseScope(scope: Scope): Promise<MemoryErasureOutcome>;
  /** The person's memory alone (every episode and fact of the scope), their conversations kept; audited as the others. */
  eraseMemory(scope: Scope): Promise<MemoryErasureOutcome>;
  /** The operator's "forget this": one profile fact removed (`facts` is 1, or 0 when it was not there), audited as the others. */
  removeFact(scope: Scope, factId: string): Promise<MemoryErasureOutcome>;
  /** The pseudonym a session carries on the trails (and on the erasure event), for an operator view that must not show the id. */
  pseudonymOf(scope: Scope, sessionId: string): TrailValue;
}

/**
 * `createMemoryErasure` (issue 18, seed 002): one erasure for a scope or a session across memory,
 * sessions, labels and both result namespaces, composed of the store set's own seams (nothing is
 * erased twice by hand here), then audited as one pseudonymous event: the lifecycle trail's
 * `erasure.completed`, its session the `sessionPseudonym` (for a scope, the kind `scope`), its
 * detail `session:<episodes>:<facts>:<fenced>` or `scope:…` — counts, never content. The event is
 * written after the erasure (which removes the session's earlier events), so it survives it; when
 * the append fails the erasure stands and the call rejects: run it again (idempotent) to record it.
 * Memory first: the counts are the memory side's own, and a failure of the rest leaves nothing
 * recallable. Erasure or expiry of completed output makes its view `unavailable`; nothing is
 * regenerated.
 */
export function createMemoryErasure(options: MemoryErasureOptions): MemoryHostErasure {
  const { erasure, memoryErasure, profiles, audit } = options.stores;
  const key = trailKey(options.trailKey);
  const now = options.now ?? Date.now;
  const record = async (
    scope: Scope,
    session: string | undefined,
    outcome: MemoryErasureOutcome,
  ) => {
    await audit.append({
      trail: "lifecycle",
      action: "erasure.completed",
      scope,
      sessionId: session === undefined ? trailKind("scope") : sessionPseudonym(key, scope, session),
      turnId: trailKind("erasure"),
      at: now(),
      detail: trailJoin(
        trailKind(outcome.target),
        outcome.episodes,
        outcome.facts,
        outcome.fencedAdmissions,
      ),
    });
    return outcome;
  };
  return Object.freeze({
    async eraseSession(scope: Scope, sessionId: string): Promise<MemoryErasureOutcome> {
      const s = normalizeScope(scope);
      const id = validateId("sessionId", sessionId);
      const memory = await memoryErasure.eraseMemory({ scope: s, sessionId: id });
      const report = await erasure.eraseSession(s, id, {
        auditSessionId: sessionPseudonym(key, s, id),
      });
      return record(
        s,
        id,
        Object.freeze({ target: "session", ...memory, fencedAdmissions: report.fencedAdmissions }),
      );
    },
    async eraseScope(scope: Scope): Promise<MemoryErasureOutcome> {
      const s = normalizeScope(scope);
      const memory = await memoryErasure.eraseMemory({ scope: s });
      const report = await erasure.eraseScope(s);
      return record(
        s,
        undefined,
        Object.freeze({ target: "scope", ...memory, fencedAdmissions: report.fencedAdmissions }),
      );
    },
    async eraseMemory(scope: Scope): Promise<MemoryErasureOutcome> {
      const s = normalizeScope(scope);
      const memory = await memoryErasure.eraseMemory({ scope: s });
      return record(
        s,
        undefined,
        Object.freeze({ target: "memory", ...memory, fencedAdmissions: 0 }),
      );
    },
    pseudonymOf: (scope: Scope, sessionId: string) => sessionPseudonym(key, scope, sessionId),
    async removeFact(scope: Scope, factId: string): Promise<MemoryErasureOutcome> {
      const s = normalizeScope(scope);
      const removed = await profiles.remove(s, factId);
      return record(
        s,
        undefined,
        Object.freeze({ target: "fact", episodes: 0, facts: removed ? 1 : 0, fencedAdmissions: 0 }),
      );
    },
  });
}
