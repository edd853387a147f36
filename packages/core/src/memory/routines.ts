import type { Scope } from "../scope.js";
import { isErasedMark } from "../stores/erasure.js";
import {
  normalizeRoutineRun,
  normalizeRoutineRunQuery,
  type RoutineClaim,
  type RoutineClaimResult,
  type RoutineFinish,
  type RoutineResolve,
  type RoutineRun,
  type RoutineRunPage,
  type RoutineRunQuery,
  type RoutineRunStore,
  routineRunKey,
} from "../stores/routine-runs.js";
import {
  claimTransition,
  finishTransition,
  interruptedRun,
  missedRun,
  normalizeRoutineClaim,
  normalizeRoutineFinish,
  normalizeRoutineResolve,
  resolveTransition,
} from "../stores/routine-transitions.js";
import {
  normalizeRoutine,
  normalizeRoutineQuery,
  normalizeRoutineRef,
  type Routine,
  type RoutinePage,
  type RoutineInput,
  type RoutinePutResult,
  type RoutineStore,
  routineCursorKey,
  routineUpdate,
} from "../stores/routines.js";
import { compareKeys, pageOf, scopeKey } from "../stores/rules.js";
import { validateTime } from "../stores/rules.js";
import { validateId } from "../scope.js";
import { covers, ERASE, type Erasable, type EraseTarget, MEMORY_STATE, markOf } from "./erase.js";

/** The reference routine store: one map keyed by scope and id. Volatile. */
export class InMemoryRoutineStore implements RoutineStore, Erasable {
  readonly #rows = new Map<string, { readonly key: string; readonly routine: Routine }>();

  async put(input: RoutineInput): Promise<RoutinePutResult> {
    const { routine, key } = normalizeRoutine(input);
    const rowKey = `${key} ${routine.id}`;
    const result = routineUpdate(this.#rows.get(rowKey)?.routine, routine);
    this.#rows.set(rowKey, { key, routine: result.routine });
    return result;
  }

  async get(scope: Scope, id: string): Promise<Routine | undefined> {
    const ref = normalizeRoutineRef(scope, id);
    return this.#rows.get(`${ref.key} ${ref.id}`)?.routine;
  }

  async remove(scope: Scope, id: string): Promise<boolean> {
    const ref = normalizeRoutineRef(scope, id);
    return this.#rows.delete(`${ref.key} ${ref.id}`);
  }

  async list(
    scope: Scope,
    query?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<RoutinePage> {
    const { key } = scopeKey(scope);
    const q = normalizeRoutineQuery(query, false);
    const sorted = [...this.#rows.values()].filter((r) => r.key === key).map((r) => r.routine);
    return pageOf(sortBy(sorted, false), (r) => routineCursorKey(r, false), q.after, q.limit);
  }

  async scan(query?: { readonly cursor?: string; readonly limit?: number }): Promise<RoutinePage> {
    const q = normalizeRoutineQuery(query, true);
    const all = [...this.#rows.values()].map((r) => r.routine);
    return pageOf(sortBy(all, true), (r) => routineCursorKey(r, true), q.after, q.limit);
  }

  /** A scope's erasure removes its routines (their goals are its content); a session's touches none. */
  [ERASE](target: EraseTarget): number {
    if (target.session) return 0;
    for (const [rowKey, row] of this.#rows) if (row.key === target.key) this.#rows.delete(rowKey);
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#rows];
  }
}

function sortBy(list: readonly Routine[], across: boolean): readonly Routine[] {
  return [...list].sort((a, b) =>
    compareKeys(routineCursorKey(a, across), routineCursorKey(b, across)),
  );
}

/**
 * The reference run store (seed 001: "the in-memory RoutineRunStore"). Every method runs to its end
 * synchronously after validation, so a claim is atomic: concurrent claimers of a slot get one `claimed`.
 */
export class InMemoryRoutineRunStore implements RoutineRunStore, Erasable {
  readonly #rows = new Map<string, { readonly key: string; run: RoutineRun }>();

  async claim(input: RoutineClaim): Promise<RoutineClaimResult> {
    const { claim, key } = normalizeRoutineClaim(input);
    const rowKey = `${key} ${claim.routineId} ${claim.slot}`;
    const t = claimTransition(this.#rows.get(rowKey)?.run, claim);
    if (t.action === "exists") return Object.freeze({ status: "exists", run: t.run });
    this.#rows.set(rowKey, { key, run: t.run });
    return Object.freeze({ status: "claimed", run: t.run, collecting: t.action === "update" });
  }

  async recordMissed(input: {
    readonly scope: Scope;
    readonly routineId: string;
    readonly slot: number;
    readonly sessionId: string;
    readonly at: number;
  }): Promise<RoutineClaimResult> {
    const { run, key } = missedRun(input);
    const rowKey = `${key} ${run.routineId} ${run.slot}`;
    const existing = this.#rows.get(rowKey);
    if (existing) return Object.freeze({ status: "exists", run: existing.run });
    this.#rows.set(rowKey, { key, run });
    return Object.freeze({ status: "claimed", run, collecting: false });
  }

  async finish(input: RoutineFinish): Promise<RoutineRun> {
    const { finish, key } = normalizeRoutineFinish(input);
    const row = this.#rows.get(`${key} ${finish.routineId} ${finish.slot}`);
    const t = finishTransition(row?.run, finish);
    if (row && t.action === "update") row.run = t.run;
    return t.run;
  }

  async reconcileInterrupted(input: {
    readonly claimedBefore: number;
    readonly at: number;
  }): Promise<readonly RoutineRun[]> {
    const before = validateTime("claimedBefore", input?.claimedBefore);
    const at = validateTime("at", input.at);
    const out: RoutineRun[] = [];
    for (const row of this.#rows.values()) {
      if (row.run.state !== "running" || (row.run.claimedAt ?? 0) >= before) continue;
      row.run = interruptedRun(row.run, at);
      out.push(row.run);
    }
    return Object.freeze(out);
  }

  async resolve(input: RoutineResolve): Promise<RoutineRun> {
    const { resolve, key } = normalizeRoutineResolve(input);
    const row = this.#rows.get(`${key} ${resolve.routineId} ${resolve.slot}`);
    const run = resolveTransition(row?.run, resolve);
    if (row) row.run = run;
    return run;
  }

  async get(scope: Scope, routineId: string, slot: number): Promise<RoutineRun | undefined> {
    const { key } = scopeKey(scope);
    return this.#rows.get(
      `${key} ${validateId("routineId", routineId)} ${validateTime("slot", slot)}`,
    )?.run;
  }

  async latest(scope: Scope, routineId: string): Promise<RoutineRun | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("routineId", routineId);
    let best: RoutineRun | undefined;
    for (const row of this.#rows.values())
      if (row.key === key && row.run.routineId === id && (!best || row.run.slot > best.slot))
        best = row.run;
    return best;
  }

  async list(scope: Scope, query?: RoutineRunQuery): Promise<RoutineRunPage> {
    const q = normalizeRoutineRunQuery(scope, query);
    const sorted = [...this.#rows.values()]
      .filter(
        (r) =>
          r.key === q.key &&
          (q.routineId === undefined || r.run.routineId === q.routineId) &&
          (q.state === undefined || r.run.state === q.state),
      )
      .map((r) => r.run)
      .sort((a, b) => compareKeys(routineRunKey(a), routineRunKey(b)));
    return pageOf(sorted, routineRunKey, q.after, q.limit);
  }

  /** A session's erasure keeps its runs under the session's mark; a scope's removes them. */
  [ERASE](target: EraseTarget): number {
    for (const [rowKey, row] of this.#rows) {
      if (!covers(target, row.key, row.run.sessionId)) continue;
      if (!target.session) this.#rows.delete(rowKey);
      else if (!isErasedMark(row.run.sessionId))
        row.run = normalizeRoutineRun({
          ...row.run,
          sessionId: markOf(target, row.run.sessionId),
        }).run;
    }
    return 0;
  }

  [MEMORY_STATE](): unknown {
    return [this.#rows];
  }
}
