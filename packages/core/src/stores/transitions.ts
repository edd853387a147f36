import { ValidationError } from "../errors.js";
import type { JsonValue } from "../snapshot.js";
import { type BudgetCaps, capRefusing, type PersistentCapName } from "../caps.js";
import type { ReservationLimits } from "../reservation.js";
import type { Admission } from "./admissions.js";
import { ConflictError, ErasedError, FenceError, ScopeFencedError } from "./errors.js";
import type { ExecutionClaim, ExecutionRecord, ExecutionState } from "./execution.js";
import type { ResultRecord, ResultState } from "./results.js";
import { CLAIM_FIELDS } from "./normalize.js";
import { sameJson } from "./rules.js";

/**
 * What a stored record becomes, decided once for every store: the result a reader sees, why a put
 * is refused, what the expiry sweep makes of a journal record, whether a claim is a retry.
 */

/** Whether two claims are the same input (a retry), compared field by field. */
export function sameClaim(a: ExecutionClaim, b: ExecutionClaim): boolean {
  return sameJson(a.scope, b.scope) && CLAIM_FIELDS.every((f) => a[f] === b[f]);
}

/** What the sweep makes of an expired record: prepared ones were never sent, dispatching ones may have been. */
export function expiryChange(state: ExecutionState): Partial<ExecutionRecord> | undefined {
  if (state === "prepared") {
    return {
      state: "not_dispatched",
      notDispatchedCause: "expired",
      evidence: Object.freeze({ status: "not_dispatched", cause: "expired" }),
    };
  }
  if (state === "dispatching") return { state: "fenced" };
  return undefined;
}

/** The record a reader sees at `now`: past `expiresAt` it is `expired` and never carries its envelope. */
export function resultView(
  r: {
    readonly resultId: string;
    readonly sessionId: string;
    readonly binding: string;
    readonly sensitivity: ResultRecord["sensitivity"];
    readonly expiresAt: number;
  },
  state: ResultState,
  envelope: JsonValue | undefined,
  now: number,
): ResultRecord {
  const live = state === "reserved" || state === "stored";
  const seen: ResultState = live && now >= r.expiresAt ? "expired" : state;
  return Object.freeze({
    resultId: r.resultId,
    sessionId: r.sessionId,
    binding: r.binding,
    state: seen,
    sensitivity: r.sensitivity,
    expiresAt: r.expiresAt,
    ...(seen === "stored" && envelope !== undefined ? { envelope } : {}),
  });
}

/** Why a put cannot land on an identity in `state` at `now`, as the contract's typed error. */
export function putRefusal(
  resultId: string,
  state: ResultState | undefined,
  expiresAt: number,
  now: number,
): Error | undefined {
  if (state === undefined)
    return new ConflictError("result_not_reserved", `result "${resultId}" was never reserved`);
  if (state === "erased" || state === "expired" || now >= expiresAt)
    return new ErasedError(`result "${resultId}"`);
  return undefined;
}

export function oversize(text: string, maxChars: number): ValidationError | undefined {
  if (text.length <= maxChars) return undefined;
  return new ValidationError(
    "envelope",
    "max_chars",
    `the envelope's JSON text is ${text.length} characters, over maxChars ${maxChars}`,
  );
}

/**
 * The one admission-fence rule every store applies inside the write it fences (session append,
 * journal claim, final-result put): the admission exists in the write's scope, is `active`, holds
 * this session, and `now` is before its deadline. Anything else is `FenceError`; an admission that
 * passes while a scope fence covers its scope (`scopeFenced`, read by the store in the same
 * transaction) is `ScopeFencedError`.
 */
export function fenceRefusal(
  admission: Pick<Admission, "state" | "sessionId" | "deadlineAt"> | undefined,
  sessionId: string,
  now: number,
  scopeFenced = false,
): FenceError | undefined {
  if (
    admission?.state !== "active" ||
    admission.sessionId !== sessionId ||
    now >= admission.deadlineAt
  )
    return new FenceError();
  return scopeFenceRefusal(scopeFenced);
}

/**
 * The one scope-fence rule: a write refused while an operator's fence (`AdmissionStore.fenceScope`)
 * covers its scope, `scopeFenced` read by the store in the write's own transaction. The fenced
 * writes apply it after their admission (`fenceRefusal`); the journal's `dispatch`, which names no
 * admission, applies it alone, before the record's state is checked.
 */
export function scopeFenceRefusal(scopeFenced: boolean): ScopeFencedError | undefined {
  return scopeFenced ? new ScopeFencedError() : undefined;
}

/**
 * Whether a reservation fits: settled plus reserved (still held at `now`) plus its own worst case
 * at or under each limit. Returns the first limit it would pass (session first), or undefined.
 */
export function reservationRefusal(
  limits: ReservationLimits,
  use: { readonly session: number; readonly tenantDay: number },
  micros: number,
): PersistentCapName | undefined {
  const caps: BudgetCaps = {
    ...(limits.perSessionUsd !== undefined
      ? { perSessionUsd: { usdMicros: limits.perSessionUsd, onExceeded: "block" } }
      : {}),
    ...(limits.perTenantDayUsd !== undefined
      ? { perTenantDayUsd: { usdMicros: limits.perTenantDayUsd, onExceeded: "block" } }
      : {}),
  };
  return capRefusing(caps, { turn: 0, ...use }, micros) as PersistentCapName | undefined;
}
