import { createHash } from "node:crypto";
import { normalizeScope, type Scope, validateId } from "../scope.js";
import {
  erasedSessionKeyedMark,
  type TrailKey,
  type TrailKeyMaterial,
  trailKey,
} from "../trail.js";

/**
 * What an erasure did: how many turns or event batches were holding the session (or, for a scope,
 * any of its sessions) when it ran. Their admissions went with the erasure, so every write they make
 * afterwards that is fenced on the admission is refused; see `SessionErasure`.
 */
export interface ErasureReport {
  readonly fencedAdmissions: number;
}

/**
 * Erasure across one linked store set, in one transaction where the store allows (SQLite: one
 * immediate transaction, then the WAL checkpointed and truncated; PostgreSQL: one transaction;
 * memory: one synchronous step). Guarantees:
 * - `eraseSession` leaves no row holding the session's content or its id: messages, step and root
 *   result envelopes, labels, admissions, per-session spend, the memory learned in it (episodes and
 *   profile facts whose source is the session, index entries included) and the audit events whose
 *   stored session value is `opts.auditSessionId` are removed; sessions, results and labels keep a
 *   tombstone keyed by `erasedSessionMark` (so an erased result cannot be revived and a late write
 *   is refused); the content-free money records — settlements, journal records, reservations held
 *   by calls in flight — keep everything but the session id, which becomes the mark, so the
 *   tenant-day totals and the scope's receipts still add up and a call sent before the erasure
 *   still settles (and is never sent again).
 * - `eraseScope` removes everything of the scope the same way (every episode and fact of it too; the label store is sealed, and the
 *   settlements keep their amounts under each session's mark).
 * - Both are idempotent: a second run, or a run after one that failed midway, finishes the job and
 *   changes nothing more. An unknown session or scope is no error (tombstones are still written).
 * - A turn holding the session is fenced, not waited for: its admission is removed, so its later
 *   transcript, root result and journal writes throw `FenceError`. Writes no store fences on the
 *   admission (an audit event, a settlement of a call already sent) can still land after the
 *   erasure: the report counts the fenced admissions, and a host erases again after their deadline.
 */
export interface SessionErasure {
  eraseSession(
    scope: Scope,
    sessionId: string,
    opts: { readonly auditSessionId: string },
  ): Promise<ErasureReport>;
  eraseScope(scope: Scope): Promise<ErasureReport>;
}

/**
 * The pseudonymous id an erased session's tombstones and receipts carry. With the deployment's
 * trail key (what the runtime compositions always give their stores): `e2_` and a keyed HMAC of the
 * scope and the session id, which nobody without the key can test a guessed id against. Without a
 * key: `e1_` and the SHA-256 of the scope and the session id; it holds neither, but whoever holds
 * the database and guesses a candidate id (a phone number) can confirm it was erased. A store set
 * must be opened with the same key every time, or it misses its own tombstones.
 */
export function erasedSessionMark(
  scope: Scope,
  sessionId: string,
  key?: TrailKey | TrailKeyMaterial,
): string {
  const s = normalizeScope(scope);
  const id = validateId("sessionId", sessionId);
  if (key !== undefined) return erasedSessionKeyedMark(key, s, id);
  return `e1_${createHash("sha256").update(`${s.org}\0${s.uid}\0${id}`).digest("hex")}`;
}

/** How a store set marks an erased session: `erasedSessionMark` under the set's key, or unkeyed. */
export type SessionMarker = (scope: Scope, sessionId: string) => string;

/** The marker of a store set opened with `key` (validated once, here), or unkeyed without one. */
export function sessionMarker(key?: TrailKey | TrailKeyMaterial): SessionMarker {
  if (key === undefined) return (scope, sessionId) => erasedSessionMark(scope, sessionId);
  const k = trailKey(key);
  return (scope, sessionId) => erasedSessionMark(scope, sessionId, k);
}

const MARK = /^(e1_[0-9a-f]{64}|e2_[0-9a-f]{32})$/;

/** Whether `id` has the form of an erased session's mark (a receipt already pseudonymized). */
export function isErasedMark(id: string): boolean {
  return MARK.test(id);
}
