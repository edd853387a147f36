import type { Sensitivity } from "../routing.js";
import type { Scope } from "../scope.js";
import type { JsonValue } from "../snapshot.js";

export interface ResultReservation {
  readonly scope: Scope;
  readonly resultId: string;
  readonly sessionId: string;
  /** Hash of what the result answers (input, options, configuration): a reservation under another binding conflicts. */
  readonly binding: string;
  readonly sensitivity: Sensitivity;
  readonly maxChars: number;
  readonly expiresAt: number;
  readonly createdAt: number;
}

export type ResultState = "reserved" | "stored" | "erased" | "expired";

export interface ResultRecord {
  readonly resultId: string;
  readonly sessionId: string;
  readonly binding: string;
  readonly state: ResultState;
  readonly sensitivity: Sensitivity;
  readonly envelope?: JsonValue;
  readonly expiresAt: number;
}

export type ReserveResult =
  | { readonly status: "reserved"; readonly record: ResultRecord }
  | { readonly status: "exists"; readonly record: ResultRecord };

/**
 * Scoped result identities and their closed envelopes (a step's output, or a conversation root's
 * final view). Hosts use two instances, for step results and for root results, which must be
 * physically separate namespaces (a separate table set or database): the runner refuses one object
 * for both. Guarantees:
 * - `reserve` is first-wins; a later reserve returns `exists` with the record (whatever the binding:
 *   the caller compares bindings).
 * - `put` stores the envelope once, on a `reserved` identity; its JSON text over `maxChars` throws
 *   `ValidationError`; an equal second put is a no-op; a different one throws `ConflictError`;
 *   on an erased or expired identity it throws `ErasedError` (tombstones cannot be revived).
 * - `get` reports `expired` at or after `expiresAt` (given `now`) and never returns its envelope.
 * - With `opts.admissionId`, `put` commits only while that admission (same scope) is `active` and
 *   `now` is before its deadline, checked in the same transaction (else `FenceError`, nothing
 *   stored): a stale process stores no final result.
 * - `eraseSession` tombstones every result of the session; `purgeExpired` drops envelopes past expiry.
 */
export interface ExecutionResultStore {
  reserve(reservation: ResultReservation): Promise<ReserveResult>;
  put(
    scope: Scope,
    resultId: string,
    envelope: JsonValue,
    now: number,
    opts?: { readonly admissionId?: string },
  ): Promise<ResultRecord>;
  get(scope: Scope, resultId: string, now: number): Promise<ResultRecord | undefined>;
  eraseSession(scope: Scope, sessionId: string): Promise<number>;
  purgeExpired(now: number): Promise<number>;
}
