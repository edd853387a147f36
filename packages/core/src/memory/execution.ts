import { type Scope, validateId } from "../scope.js";
import { ConflictError, StaleFenceError } from "../stores/errors.js";
import type {
  ClaimOptions,
  ClaimResult,
  ExecutionClaim,
  ExecutionRecord,
  ExecutionState,
  ExecutionStore,
  Fence,
} from "../stores/execution.js";
import { currentAdmission, type InMemoryAdmissionStore, scopeFenced } from "./admissions.js";
import { type InMemorySpendStore, releaseSpend, reserveSpend } from "./settlements.js";
import type { NotDispatchedCause, UsageEvidence } from "../usage.js";
import {
  normalizeCancelCause,
  normalizeClaim,
  normalizeClaimOptions,
  normalizeFence,
  normalizeReceivedEvidence,
  normalizeReconcile,
} from "../stores/normalize.js";
import { prepareExecutionList } from "../stores/prepare.js";
import { pageOf, scopeKey, validateTime } from "../stores/rules.js";
import { expiryChange, fenceRefusal, sameClaim, scopeFenceRefusal } from "../stores/transitions.js";
import { isErasedMark } from "../stores/erasure.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

const RESOLVED: readonly ExecutionState[] = ["completed", "not_dispatched"];

/**
 * The reference execution journal. Each method validates, then runs synchronously to its end, so a
 * claim or a fenced transition is one atomic step; records are frozen and replaced, never mutated.
 */
export class InMemoryExecutionStore implements ExecutionStore, Erasable {
  readonly #rows = new Map<string, ExecutionRecord>();
  readonly #links: {
    readonly admissions?: InMemoryAdmissionStore;
    readonly spend?: InMemorySpendStore;
  };

  /**
   * `admissions` fences claims that name an admission, and every dispatch by its scope fences; `spend` holds their reservations (the same
   * spend store the settlement store moves). A claim naming either without the link throws.
   */
  constructor(
    links: {
      readonly admissions?: InMemoryAdmissionStore;
      readonly spend?: InMemorySpendStore;
    } = {},
  ) {
    this.#links = links;
  }

  async claim(claim: ExecutionClaim, opts?: ClaimOptions): Promise<ClaimResult> {
    const c = normalizeClaim(claim);
    const o = normalizeClaimOptions(opts);
    const { key: scopeText } = scopeKey(c.scope);
    const key = `${scopeText} ${c.operationId}`;
    const { admissions, spend } = this.#links;
    if (o.admissionId !== undefined && !admissions)
      throw new TypeError("this journal was built without an admission store to fence claims on");
    if (o.reservation !== undefined && !spend)
      throw new TypeError("this journal was built without a spend store to reserve on");
    // From here on everything is synchronous: the fence, the reservation and the claim are one step.
    const existing = this.#rows.get(key);
    if (existing) {
      if (!sameClaim(existing, c))
        throw new ConflictError(
          "execution_conflict",
          `operation "${c.operationId}" was claimed with different input`,
        );
      return Object.freeze({ status: "exists", record: existing });
    }
    if (o.admissionId !== undefined && admissions) {
      const refused = fenceRefusal(
        currentAdmission(admissions, scopeText, o.admissionId),
        c.sessionId,
        c.createdAt,
        scopeFenced(admissions, scopeText),
      );
      if (refused) throw refused;
    }
    if (o.reservation !== undefined && spend) {
      const cap = reserveSpend(
        spend,
        {
          scopeKey: scopeText,
          org: c.scope.org,
          sessionId: c.sessionId,
          operationId: c.operationId,
          now: c.createdAt,
        },
        o.reservation,
      );
      if (cap) return Object.freeze({ status: "refused", cap });
    }
    const record: ExecutionRecord = Object.freeze({
      ...c,
      state: "prepared",
      fenceToken: 1,
      updatedAt: c.createdAt,
    });
    this.#rows.set(key, record);
    // Built from the checked claim through the fence rule, so the transitions take it back without a re-check.
    const fence: Fence = normalizeFence({ scope: c.scope, operationId: c.operationId, token: 1 });
    return Object.freeze({ status: "claimed", fence, record });
  }

  async dispatch(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "prepared", () => ({ state: "dispatching" }), undefined, true);
  }

  async receive(fence: Fence, evidence: UsageEvidence, now: number): Promise<ExecutionRecord> {
    const e = normalizeReceivedEvidence(evidence);
    return this.#step(fence, now, "dispatching", () => ({ state: "received", evidence: e }));
  }

  async settle(fence: Fence, settlementId: string, now: number): Promise<ExecutionRecord> {
    const id = validateId("settlementId", settlementId);
    return this.#step(fence, now, "received", () => ({ state: "settled", settlementId: id }));
  }

  async complete(fence: Fence, now: number): Promise<ExecutionRecord> {
    return this.#step(fence, now, "settled", () => ({ state: "completed" }));
  }

  async cancelPrepared(
    fence: Fence,
    cause: Exclude<NotDispatchedCause, "expired">,
    now: number,
  ): Promise<ExecutionRecord> {
    const c = normalizeCancelCause(cause);
    return this.#step(
      fence,
      now,
      "prepared",
      () => ({
        state: "not_dispatched",
        notDispatchedCause: c,
        evidence: Object.freeze({ status: "not_dispatched", cause: c }),
      }),
      (row) => this.#release(row),
    );
  }

  async get(scope: Scope, operationId: string): Promise<ExecutionRecord | undefined> {
    return this.#rows.get(`${scopeKey(scope).key} ${validateId("operationId", operationId)}`);
  }

  async list(
    scope: Scope,
    opts: { readonly cursor?: string; readonly limit?: number; readonly resolved?: boolean } = {},
  ): Promise<{ readonly items: readonly ExecutionRecord[]; readonly nextCursor?: string }> {
    // The one owner of the listing's rules (closed options, page limits, cursor): what SQLite and PostgreSQL use.
    const { key, limit, after, resolved } = prepareExecutionList(scope, opts);
    const prefix = `${key} `;
    const open = [...this.#rows]
      .filter(([k, r]) => k.startsWith(prefix) && (resolved || !RESOLVED.includes(r.state)))
      .map(([, r]) => r);
    open.sort(byCreated);
    return Object.freeze(pageOf(open, (r) => [r.createdAt, r.operationId], after, limit));
  }

  async reconcileExpired(input: {
    readonly now: number;
    readonly scope?: Scope;
  }): Promise<readonly ExecutionRecord[]> {
    const r = normalizeReconcile(input);
    const only = r.scope === undefined ? undefined : `${scopeKey(r.scope).key} `;
    const out: ExecutionRecord[] = [];
    for (const [key, row] of this.#rows) {
      if ((only !== undefined && !key.startsWith(only)) || row.deadlineAt > r.now) continue;
      const change = expiryChange(row.state);
      if (!change) continue;
      const next: ExecutionRecord = Object.freeze({
        ...row,
        ...change,
        fenceToken: row.fenceToken + 1,
        updatedAt: r.now,
      });
      this.#rows.set(key, next);
      // Never sent: its money is free again. A fenced record may have spent: it stays held.
      if (next.state === "not_dispatched") this.#release(next);
      out.push(next);
    }
    return Object.freeze(out.sort(byCreated));
  }

  /**
   * Keeps the target's journal records (content-free: ids, model, prices, usage) with the session id
   * replaced by its mark: a call still in flight can settle, and a sent call is never sent again.
   */
  [ERASE](target: EraseTarget): number {
    for (const [key, row] of this.#rows) {
      if (
        !key.startsWith(`${target.key} `) ||
        isErasedMark(row.sessionId) ||
        !covers(target, target.key, row.sessionId)
      )
        continue;
      this.#rows.set(key, Object.freeze({ ...row, sessionId: markOf(target, row.sessionId) }));
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return this.#rows;
  }

  #release(row: ExecutionRecord): void {
    if (this.#links.spend)
      releaseSpend(this.#links.spend, scopeKey(row.scope).key, row.operationId);
  }

  /** `fenced`: the transition is scope-fenced (the dispatch), checked before the record's state. */
  #step(
    fence: Fence,
    now: number,
    from: ExecutionState,
    change: () => Partial<ExecutionRecord>,
    effect?: (row: ExecutionRecord) => void,
    fenced = false,
  ): ExecutionRecord {
    const f = normalizeFence(fence);
    const at = validateTime("now", now);
    const scopeText = scopeKey(f.scope).key;
    const key = `${scopeText} ${f.operationId}`;
    const admissions = this.#links.admissions;
    const refused =
      fenced && admissions ? scopeFenceRefusal(scopeFenced(admissions, scopeText)) : undefined;
    if (refused) throw refused;
    const row = this.#rows.get(key);
    if (!row || row.fenceToken !== f.token) throw new StaleFenceError();
    if (row.state !== from) throw new StaleFenceError(`the record is ${row.state}, not ${from}`);
    const next: ExecutionRecord = Object.freeze({ ...row, ...change(), updatedAt: at });
    this.#rows.set(key, next);
    effect?.(next);
    return next;
  }
}

function byCreated(a: ExecutionRecord, b: ExecutionRecord): number {
  return (
    a.createdAt - b.createdAt ||
    (a.operationId < b.operationId ? -1 : a.operationId > b.operationId ? 1 : 0)
  );
}
