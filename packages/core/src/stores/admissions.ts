import type { Scope } from "../scope.js";
import type { ScopeFence, ScopeFenceReason, ScopeFenceTarget } from "./fences.js";

export type AdmissionKind = "turn" | "events";
/**
 * `active` holds the session; `uncertain` still holds it but no append of its owner can land;
 * `finished` released it after a completed turn; `released` released it after a failure
 * (`releaseFailed`) or by the expiry sweep.
 */
export type AdmissionState = "active" | "uncertain" | "finished" | "released";

export interface Admission {
  readonly admissionId: string;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly kind: AdmissionKind;
  readonly state: AdmissionState;
  readonly createdAt: number;
  readonly deadlineAt: number;
  readonly releaseReason?: "failed" | "expired";
}

export type AdmitResult =
  | { readonly status: "admitted"; readonly admission: Admission }
  | { readonly status: "busy"; readonly holder: Admission };

/**
 * One turn (or event batch) per session at a time. Guarantees:
 * - `admit` is atomic: of concurrent admits on one session exactly one is admitted, the others see
 *   the holder (`busy`) while it is `active` or `uncertain`.
 * - `markUncertain`, `finish`, `releaseFailed` transition only from the states named on each and
 *   return the admission as it is after the call; a transition from any other state is a no-op
 *   that returns the current record (so a lost acknowledgement can be read back).
 * - `releaseExpired` releases every `active`/`uncertain` admission of the scope (all scopes when
 *   omitted) whose deadline plus `graceMs` is at or before `now`, and returns them; `sessionId`
 *   (with `scope`) and `kind` narrow it to one session and one kind of admission.
 * - Scope fences (spec: scope-fence). `fenceScope` records a fence on a whole org (`{org}`) or on
 *   one scope (`{org, uid}`), durably; a second fence of the same target keeps the first and returns
 *   it. `liftScopeFence` removes exactly that target's fence and says whether one was there.
 *   `scopeFences({org})` lists every fence of the org; `scopeFences({org, uid})` the ones covering
 *   that scope (the org's and its own). While a fence covers a scope, `admit` on it throws
 *   `ScopeFencedError` after the session's occupancy is checked (a holder still answers `busy`),
 *   and every write fenced on one of its admissions (session append, journal claim, final-result
 *   put) throws `ScopeFencedError` in the write's own transaction, writing nothing; so does the
 *   journal's `dispatch` of a record in that scope (`ExecutionStore`). A fence never blocks a
 *   transition of an admission (mark, finish, release), a journal transition other than the
 *   dispatch, or an erasure; the SQL stores make `fenceScope` wait for the fenced writes and
 *   dispatches in flight, so once it returns none of them can land.
 * - An admission id is used once per scope: admitting an id that exists throws `ConflictError`
 *   (code `admission_exists`), so no two callers ever hold one fence.
 * - Scope isolation: an admission id from another scope reads as absent.
 */
export interface AdmissionStore {
  admit(input: {
    scope: Scope;
    sessionId: string;
    rootKey: string;
    kind: AdmissionKind;
    admissionId: string;
    now: number;
    deadlineAt: number;
  }): Promise<AdmitResult>;
  get(scope: Scope, admissionId: string): Promise<Admission | undefined>;
  /** The admission holding the session now, if any. */
  holder(scope: Scope, sessionId: string): Promise<Admission | undefined>;
  /** active → uncertain. */
  markUncertain(scope: Scope, admissionId: string): Promise<Admission | undefined>;
  /** active → finished. */
  finish(scope: Scope, admissionId: string): Promise<Admission | undefined>;
  /** active | uncertain → released (reason failed). */
  releaseFailed(scope: Scope, admissionId: string): Promise<Admission | undefined>;
  releaseExpired(input: {
    scope?: Scope;
    sessionId?: string;
    kind?: AdmissionKind;
    now: number;
    graceMs: number;
  }): Promise<readonly Admission[]>;
  fenceScope(input: {
    target: ScopeFenceTarget;
    reason: ScopeFenceReason;
    now: number;
  }): Promise<ScopeFence>;
  liftScopeFence(target: ScopeFenceTarget): Promise<boolean>;
  scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]>;
}
