import type { Scope } from "../scope.js";
import type { Admission, AdmissionKind, AdmitResult } from "./admissions.js";
import { type AdmissionRow, admissionFromRow } from "./codecs.js";
import { ConflictError } from "./errors.js";
import { type AdmitInput, normalizeAdmit, normalizeReleaseExpired } from "./normalize.js";
import { onlyKey, scopeKey } from "./rules.js";

/** What the SQL stores do before and after their admission statements (see `prepare.ts`). */

export function prepareAdmit(input: unknown): { readonly a: AdmitInput; readonly key: string } {
  const a = normalizeAdmit(input);
  return { a, key: scopeKey(a.scope).key };
}

export const admitted = (row: AdmissionRow): AdmitResult =>
  Object.freeze({ status: "admitted", admission: admissionFromRow(row) });
export const busy = (holder: AdmissionRow): AdmitResult =>
  Object.freeze({ status: "busy", holder: admissionFromRow(holder) });
export const admissionExists = (admissionId: string): ConflictError =>
  new ConflictError("admission_exists", `admission "${admissionId}" already exists`);
export const admissionOf = (row: AdmissionRow | undefined): Admission | undefined =>
  row ? admissionFromRow(row) : undefined;

/** An admission transition as SQL fragments both SQL stores use as they are (`UPDATE admissions SET <set> WHERE scope = … AND admission_id = … AND <from>`). */
export interface AdmissionTransition {
  readonly from: string;
  readonly set: string;
}

/** The admission transitions, written once over a store's one conditional update (`transition`). */
export abstract class AdmissionTransitions {
  protected abstract transition(
    scope: Scope,
    admissionId: string,
    t: AdmissionTransition,
  ): Promise<Admission | undefined>;

  async markUncertain(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.transition(scope, admissionId, {
      from: "state = 'active'",
      set: "state = 'uncertain'",
    });
  }

  async finish(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.transition(scope, admissionId, {
      from: "state = 'active'",
      set: "state = 'finished'",
    });
  }

  async releaseFailed(scope: Scope, admissionId: string): Promise<Admission | undefined> {
    return this.transition(scope, admissionId, {
      from: "state IN ('active', 'uncertain')",
      set: "state = 'released', release_reason = 'failed'",
    });
  }
}

/** `only`: the one scope's key, or `null` for every scope. */
export function prepareReleaseExpired(input: unknown): {
  readonly now: number;
  readonly graceMs: number;
  readonly only: string | null;
  readonly sessionId: string | null;
  readonly kind: AdmissionKind | null;
} {
  const r = normalizeReleaseExpired(input);
  return {
    now: r.now,
    graceMs: r.graceMs,
    only: onlyKey(r.scope),
    sessionId: r.sessionId ?? null,
    kind: r.kind ?? null,
  };
}

/** The released admissions, in (deadlineAt, admissionId) order. */
export function releasedAdmissions(rows: readonly AdmissionRow[]): readonly Admission[] {
  const out = rows
    .map(admissionFromRow)
    .sort((a, b) => a.deadlineAt - b.deadlineAt || (a.admissionId < b.admissionId ? -1 : 1));
  return Object.freeze(out);
}
