import type { Msg } from "../messages.js";
import type { Scope } from "../scope.js";

/** Fencing for an append: the admission that must be `active` for this session. */
export interface AppendOpts {
  readonly admissionId: string;
}

export interface SessionView {
  /** The messages from the last rotation marker on (the whole log when there is none). */
  readonly messages: readonly Msg[];
  /** Number of messages in the whole log: each append advances it by the batch's length. */
  readonly revision: number;
  /** Index in the whole log where `messages` starts. */
  readonly offset: number;
  readonly erased: boolean;
}

export interface SessionSummary {
  readonly sessionId: string;
  readonly revision: number;
  readonly updatedAt: number;
}

/**
 * The transcript the model sees: append-only, never rewritten. Guarantees:
 * - `append` writes the whole batch or nothing, and only while the admission named by `opts` is
 *   `active` for this scope and session and `opts.now` is before its deadline, checked and held in
 *   the same transaction (else `FenceError`).
 * - Event ids (`meta.event.id`) are unique in a session's log: an append carrying an existing id
 *   throws `DuplicateEventError` and writes nothing.
 * - `load` returns frozen messages from the last rotation marker on; an erased session loads empty
 *   with `erased: true`, and later appends throw `FenceError`.
 * - `findEvents` returns the messages carrying the given event ids, in log order.
 * - Scope isolation: a session id under another scope is a different session.
 */
export interface SessionStore {
  load(scope: Scope, sessionId: string): Promise<SessionView>;
  append(
    scope: Scope,
    sessionId: string,
    messages: readonly Msg[],
    opts: AppendOpts & { readonly now: number },
  ): Promise<{ readonly revision: number }>;
  findEvents(scope: Scope, sessionId: string, eventIds: readonly string[]): Promise<readonly Msg[]>;
  list(
    scope: Scope,
    opts?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<{ readonly items: readonly SessionSummary[]; readonly nextCursor?: string }>;
  erase(scope: Scope, sessionId: string): Promise<void>;
}
