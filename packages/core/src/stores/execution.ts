import type { CallKind, PersistentCapName } from "../caps.js";
import type { ReservationLimits } from "../reservation.js";
import type { Scope } from "../scope.js";
import type { NotDispatchedCause, UsageEvidence } from "../usage.js";

/**
 * `prepared` (claimed, nothing sent) → `dispatching` (committed before any byte leaves) →
 * `received` (usage evidence kept) → `settled` (priced through the settlement store) → `completed`.
 * `not_dispatched` ends a prepared record (with a cause); `fenced` is what the recovery sweep
 * makes of an expired `dispatching` record: it may have been sent, it is never sent again.
 */
export type ExecutionState =
  | "prepared"
  | "dispatching"
  | "received"
  | "settled"
  | "completed"
  | "not_dispatched"
  | "fenced";

/** A content-free claim: who, what model, at what prices; never the prompt or the reply. */
export interface ExecutionClaim {
  readonly scope: Scope;
  readonly operationId: string;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly turnId: string;
  readonly kind: CallKind;
  readonly clientId: string;
  readonly model: string;
  readonly priceVersion: string;
  readonly policyVersion: string;
  readonly createdAt: number;
  readonly deadlineAt: number;
}

export interface ExecutionRecord extends ExecutionClaim {
  readonly state: ExecutionState;
  readonly fenceToken: number;
  readonly evidence?: UsageEvidence;
  readonly notDispatchedCause?: NotDispatchedCause;
  readonly settlementId?: string;
  readonly updatedAt: number;
}

export interface Fence {
  readonly scope: Scope;
  readonly operationId: string;
  readonly token: number;
}

/**
 * Money held for a call in flight, taken in the claim's own transaction: `usdMicros` (the call's
 * worst case) counts toward the session and the tenant-day (`day`, the org's UTC day) from the
 * claim until the call settles, is cancelled before dispatch or expires as not dispatched, or
 * until `expiresAt` passes. It is refused when settled spend plus the reservations still held plus
 * `usdMicros` would pass a limit in `limits`.
 */
export interface ClaimReservation {
  readonly day: string;
  readonly usdMicros: number;
  readonly limits: ReservationLimits;
  readonly expiresAt: number;
}

export interface ClaimOptions {
  /** The admission the claim is fenced by: it must be `active` and `claim.createdAt` before its deadline (else `FenceError`). */
  readonly admissionId?: string;
  readonly reservation?: ClaimReservation;
}

export type ClaimResult =
  | { readonly status: "claimed"; readonly fence: Fence; readonly record: ExecutionRecord }
  | { readonly status: "exists"; readonly record: ExecutionRecord }
  /** The reservation did not fit under a block cap: nothing was claimed or reserved. */
  | { readonly status: "refused"; readonly cap: PersistentCapName };

/**
 * The durable call journal. Guarantees:
 * - Only the first `claim` of an operation id receives a fence; a retry (equal input) or a
 *   concurrent claim gets `exists`, never a fence. A claim with different input throws `ConflictError`.
 * - Every transition takes the fence and throws `StaleFenceError` when the fence is no longer
 *   current (the sweep fenced the record) or the record is not in the state the transition needs.
 * - `dispatch` (prepared → dispatching) must commit before provider egress and cannot be replayed.
 *   It is scope-fenced (spec: scope-fence): while an operator's fence covers the record's scope
 *   (its org's or its own, `AdmissionStore.fenceScope`), read in the dispatch's own transaction
 *   before the record's state, it throws `ScopeFencedError` and changes nothing: the record stays
 *   `prepared`, and its owner sends nothing and cancels it (`cancelPrepared`, cause `scope_fenced`).
 *   The SQL stores serialize it with `fenceScope` as the fenced writes are: once `fenceScope`
 *   returns, no dispatch of a covered scope lands. A store without a linked admission store (a
 *   bare memory journal) has no fence to read.
 * - `receive` keeps the known / unpriced / unknown distinction as given.
 * - `reconcileExpired` turns expired `prepared` records into `not_dispatched` (cause `expired`) and
 *   expired `dispatching` ones into `fenced`, bumping the fence token; it never re-sends.
 * - `cancelPrepared` records the owner's cause once; it refuses `expired`, which only the sweep records.
 * - With `opts.admissionId`, a claim commits only while that admission (same scope) is `active`
 *   and `createdAt` is before its deadline, checked in the claim's transaction: else `FenceError`,
 *   and nothing is claimed. A stale process claims nothing.
 * - With `opts.reservation`, the claim and the reservation commit together or not at all (see
 *   `ClaimReservation`); `cancelPrepared` and the sweep's `not_dispatched` release it in their own
 *   transaction; the settlement of the call's receipt (the receipt whose `operationId` is the
 *   claim's) releases it in the settlement's transaction. A `fenced` record keeps it until `expiresAt`.
 */
export interface ExecutionStore {
  claim(claim: ExecutionClaim, opts?: ClaimOptions): Promise<ClaimResult>;
  dispatch(fence: Fence, now: number): Promise<ExecutionRecord>;
  receive(fence: Fence, evidence: UsageEvidence, now: number): Promise<ExecutionRecord>;
  settle(fence: Fence, settlementId: string, now: number): Promise<ExecutionRecord>;
  complete(fence: Fence, now: number): Promise<ExecutionRecord>;
  cancelPrepared(
    fence: Fence,
    cause: Exclude<NotDispatchedCause, "expired">,
    now: number,
  ): Promise<ExecutionRecord>;
  get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined>;
  /**
   * Unresolved records (not completed / not_dispatched) of a scope, ascending by (createdAt,
   * operationId); with `resolved: true`, the records in every state (the runner's `listUnresolved`
   * needs the completed calls of a turn that never stored its final result).
   */
  list(
    scope: Scope,
    opts?: { readonly cursor?: string; readonly limit?: number; readonly resolved?: boolean },
  ): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }>;
  reconcileExpired(input: {
    readonly now: number;
    readonly scope?: Scope;
  }): Promise<readonly ExecutionRecord[]>;
}
