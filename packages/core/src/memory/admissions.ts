import { validateId } from "../scope.js";
import type {
  Admission,
  AdmissionState,
  AdmissionStore,
  AdmitResult,
} from "../stores/admissions.js";
import { ConflictError } from "../stores/errors.js";
import { normalizeAdmit, normalizeReleaseExpired } from "../stores/normalize.js";
import { scopeKey } from "../stores/rules.js";
import {
  coveringFenceKeys,
  fenceKey,
  normalizeFenceInput,
  normalizeFenceTarget,
  type ScopeFence,
  type ScopeFenceTarget,
} from "../stores/fences.js";
import { ScopeFencedError } from "../stores/errors.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE } from "./erase.js";

const HOLDING: readonly AdmissionState[] = ["active", "uncertain"];

let readRow: (store: InMemoryAdmissionStore, rowKey: string) => Admission | undefined;
let readFenced: (store: InMemoryAdmissionStore, scopeKeyText: string) => boolean;
let writeRow: (store: InMemoryAdmissionStore, scopeKeyText: string, row: Admission) => void;

/**
 * The reference admission store. Every method validates first and then runs synchronously to its
 * end, so each call is one atomic step: concurrent admits on one session admit exactly one.
 * Records are frozen; the store replaces them, never mutates them.
 */
export class InMemoryAdmissionStore implements AdmissionStore, Erasable {
  readonly #rows = new Map<string, Admission>();
  /** `scope session` → admission id of the holder (active or uncertain). */
  readonly #holders = new Map<string, string>();
  /** Scope fences by `fenceKey` (`org/uid`, or `org/*` for the whole org). */
  readonly #fences = new Map<string, ScopeFence>();

  static {
    readRow = (store, rowKey) => store.#rows.get(rowKey);
    readFenced = (store, scopeKeyText) =>
      coveringFenceKeys(scopeKeyText).some((k) => store.#fences.has(k));
    writeRow = (store, scopeKeyText, row) => {
      store.#rows.set(`${scopeKeyText} ${row.admissionId}`, row);
      const holderKey = `${scopeKeyText} ${row.sessionId}`;
      if (HOLDING.includes(row.state)) store.#holders.set(holderKey, row.admissionId);
      else if (store.#holders.get(holderKey) === row.admissionId) store.#holders.delete(holderKey);
    };
  }

  async admit(input: Parameters<AdmissionStore["admit"]>[0]): Promise<AdmitResult> {
    const a = normalizeAdmit(input);
    const { key } = scopeKey(a.scope);
    const rowKey = `${key} ${a.admissionId}`;
    if (this.#rows.has(rowKey))
      throw new ConflictError("admission_exists", `admission "${a.admissionId}" already exists`);
    const holder = this.#holderOf(key, a.sessionId);
    if (holder) return Object.freeze({ status: "busy", holder });
    if (readFenced(this, key)) throw new ScopeFencedError();
    const admission: Admission = Object.freeze({
      admissionId: a.admissionId,
      scope: a.scope,
      sessionId: a.sessionId,
      rootKey: a.rootKey,
      kind: a.kind,
      state: "active",
      createdAt: a.now,
      deadlineAt: a.deadlineAt,
    });
    this.#rows.set(rowKey, admission);
    this.#holders.set(`${key} ${a.sessionId}`, a.admissionId);
    return Object.freeze({ status: "admitted", admission });
  }

  async get(scope: Admission["scope"], admissionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    return this.#rows.get(`${key} ${validateId("admissionId", admissionId)}`);
  }

  async holder(scope: Admission["scope"], sessionId: string): Promise<Admission | undefined> {
    const { key } = scopeKey(scope);
    return this.#holderOf(key, validateId("sessionId", sessionId));
  }

  async markUncertain(
    scope: Admission["scope"],
    admissionId: string,
  ): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, ["active"], "uncertain");
  }

  async finish(scope: Admission["scope"], admissionId: string): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, ["active"], "finished");
  }

  async releaseFailed(
    scope: Admission["scope"],
    admissionId: string,
  ): Promise<Admission | undefined> {
    return this.#transition(scope, admissionId, HOLDING, "released", "failed");
  }

  async releaseExpired(
    input: Parameters<AdmissionStore["releaseExpired"]>[0],
  ): Promise<readonly Admission[]> {
    const r = normalizeReleaseExpired(input);
    const only = r.scope === undefined ? undefined : scopeKey(r.scope).key;
    const released: Admission[] = [];
    for (const [rowKey, row] of this.#rows) {
      if (only !== undefined && !rowKey.startsWith(`${only} `)) continue;
      if (
        (r.sessionId !== undefined && row.sessionId !== r.sessionId) ||
        (r.kind !== undefined && row.kind !== r.kind)
      )
        continue;
      if (!HOLDING.includes(row.state) || row.deadlineAt + r.graceMs > r.now) continue;
      released.push(this.#replace(rowKey, row, "released", "expired"));
    }
    return Object.freeze(
      released.sort(
        (a, b) => a.deadlineAt - b.deadlineAt || (a.admissionId < b.admissionId ? -1 : 1),
      ),
    );
  }

  async fenceScope(input: Parameters<AdmissionStore["fenceScope"]>[0]): Promise<ScopeFence> {
    const f = normalizeFenceInput(input);
    const key = fenceKey(f.target);
    const present = this.#fences.get(key);
    if (present) return present;
    const fence: ScopeFence = Object.freeze({ ...f.target, reason: f.reason, fencedAt: f.now });
    this.#fences.set(key, fence);
    return fence;
  }

  async liftScopeFence(target: ScopeFenceTarget): Promise<boolean> {
    return this.#fences.delete(fenceKey(normalizeFenceTarget(target)));
  }

  async scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]> {
    const t = normalizeFenceTarget(target);
    const out: ScopeFence[] = [];
    for (const fence of this.#fences.values()) {
      if (fence.org !== t.org) continue;
      if (t.uid === undefined || fence.uid === undefined || fence.uid === t.uid) out.push(fence);
    }
    return Object.freeze(out.sort((a, b) => fenceKey(a).localeCompare(fenceKey(b))));
  }

  #holderOf(key: string, sessionId: string): Admission | undefined {
    const id = this.#holders.get(`${key} ${sessionId}`);
    return id === undefined ? undefined : this.#rows.get(`${key} ${id}`);
  }

  #transition(
    scope: Admission["scope"],
    admissionId: string,
    from: readonly AdmissionState[],
    to: AdmissionState,
    reason?: "failed" | "expired",
  ): Admission | undefined {
    const { key } = scopeKey(scope);
    const rowKey = `${key} ${validateId("admissionId", admissionId)}`;
    const row = this.#rows.get(rowKey);
    if (!row || !from.includes(row.state)) return row;
    return this.#replace(rowKey, row, to, reason);
  }

  /** Removes the target's admissions, holding ones included (their turns are fenced from now on); returns how many were holding. */
  [ERASE](target: EraseTarget): number {
    let holding = 0;
    for (const [rowKey, row] of this.#rows) {
      if (!covers(target, rowKey.slice(0, rowKey.indexOf(" ")), row.sessionId)) continue;
      if (HOLDING.includes(row.state)) holding += 1;
      this.#rows.delete(rowKey);
      this.#holders.delete(`${target.key} ${row.sessionId}`);
    }
    return holding;
  }

  [MEMORY_STATE](): unknown {
    return [this.#rows, this.#holders];
  }

  #replace(
    rowKey: string,
    row: Admission,
    state: AdmissionState,
    reason?: "failed" | "expired",
  ): Admission {
    const next: Admission = Object.freeze({
      ...row,
      state,
      ...(reason ? { releaseReason: reason } : {}),
    });
    this.#rows.set(rowKey, next);
    if (!HOLDING.includes(state))
      this.#holders.delete(`${rowKey.slice(0, rowKey.indexOf(" "))} ${row.sessionId}`);
    return next;
  }
}

/** Whether a scope fence covers the scope at this instant, read synchronously with the admission (the memory stores' fence check). */
export function scopeFenced(store: InMemoryAdmissionStore, scopeKeyText: string): boolean {
  return readFenced(store, scopeKeyText);
}

/** The admission as it is at this instant, read synchronously: the memory session store's fence check. */
export function currentAdmission(
  store: InMemoryAdmissionStore,
  scopeKeyText: string,
  admissionId: string,
): Admission | undefined {
  return readRow(store, `${scopeKeyText} ${admissionId}`);
}

/**
 * Writes an admission as it is now, its session's holder kept in step, synchronously: the memory
 * parked-turn store's park and claim move admissions in the same step as their own record.
 */
export function writeAdmission(
  store: InMemoryAdmissionStore,
  scopeKeyText: string,
  row: Admission,
): void {
  writeRow(store, scopeKeyText, Object.freeze({ ...row }));
}
