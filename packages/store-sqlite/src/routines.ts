import {
  claimTransition,
  finishTransition,
  interruptedRun,
  missedRun,
  normalizeRoutine,
  normalizeRoutineClaim,
  normalizeRoutineFinish,
  normalizeRoutineQuery,
  normalizeRoutineRef,
  normalizeRoutineResolve,
  normalizeRoutineRunQuery,
  type Routine,
  type RoutineClaim,
  type RoutineClaimResult,
  type RoutineFinish,
  type RoutinePage,
  type RoutineInput,
  type RoutinePutResult,
  type RoutineResolve,
  type RoutineRun,
  type RoutineRunPage,
  type RoutineRunQuery,
  type RoutineRunStore,
  type RoutineStore,
  resolveTransition,
  routineCursorKey,
  routineFromText,
  routineRunFromText,
  routineRunKey,
  routineRunText,
  routineText,
  routineUpdate,
  type Scope,
  validateId,
} from "@alma-harness/core";
import { pageOfFetched, scopeFromKey, scopeKey, validateTime } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";

/** Routines in SQLite (`routines`, schema version 7): one row per `(scope, id)`, the record as JSON. */
export class SqliteRoutineStore implements RoutineStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async put(input: RoutineInput): Promise<RoutinePutResult> {
    const { routine, key } = normalizeRoutine(input);
    return this.#db.durable(() => {
      const row = this.#db
        .stmt("SELECT record FROM routines WHERE scope = ? AND id = ?")
        .get(key, routine.id) as { record: string } | undefined;
      const result = routineUpdate(
        row ? routineFromText(routine.scope, row.record) : undefined,
        routine,
      );
      if (result.status !== "unchanged") {
        this.#db
          .stmt(
            "INSERT INTO routines (scope, id, record) VALUES (?, ?, ?) ON CONFLICT (scope, id) DO UPDATE SET record = excluded.record",
          )
          .run(key, routine.id, routineText(result.routine));
      }
      return result;
    });
  }

  async get(scope: Scope, id: string): Promise<Routine | undefined> {
    const ref = normalizeRoutineRef(scope, id);
    const row = this.#db.guard(() =>
      this.#db.stmt("SELECT record FROM routines WHERE scope = ? AND id = ?").get(ref.key, ref.id),
    ) as { record: string } | undefined;
    return row ? routineFromText(ref.scope, row.record) : undefined;
  }

  async remove(scope: Scope, id: string): Promise<boolean> {
    const ref = normalizeRoutineRef(scope, id);
    return this.#db.durable(
      () =>
        this.#db.stmt("DELETE FROM routines WHERE scope = ? AND id = ?").run(ref.key, ref.id)
          .changes > 0,
    );
  }

  async list(
    scope: Scope,
    query?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<RoutinePage> {
    const { scope: s, key } = scopeKey(scope);
    const q = normalizeRoutineQuery(query, false);
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt("SELECT record FROM routines WHERE scope = ? AND id > ? ORDER BY id LIMIT ?")
          .all(key, q.after?.[0] ?? "", q.limit + 1) as { record: string }[],
    );
    return pageOfFetched(
      rows.map((r) => routineFromText(s, r.record)),
      q.limit,
      (r) => routineCursorKey(r, false),
    );
  }

  async scan(query?: { readonly cursor?: string; readonly limit?: number }): Promise<RoutinePage> {
    const q = normalizeRoutineQuery(query, true);
    const [k, id] = q.after ?? ["", ""];
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            "SELECT scope, record FROM routines WHERE (scope, id) > (?, ?) ORDER BY scope, id LIMIT ?",
          )
          .all(k, id, q.limit + 1) as {
          scope: string;
          record: string;
        }[],
    );
    return pageOfFetched(
      rows.map((r) => routineFromText(scopeFromKey(r.scope), r.record)),
      q.limit,
      (r) => routineCursorKey(r, true),
    );
  }
}

type RunRow = { scope: string; record: string };

/**
 * Routine runs in SQLite (`routine_runs`, schema version 7). Every write reads the slot's row and
 * writes its transition inside one immediate transaction (the write lock taken before the read), so
 * a claim is atomic for every connection to the file; each write is a durability point.
 */
export class SqliteRoutineRunStore implements RoutineRunStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  #row(key: string, scope: Scope, routineId: string, slot: number): RoutineRun | undefined {
    const row = this.#db
      .stmt("SELECT record FROM routine_runs WHERE scope = ? AND routine_id = ? AND slot = ?")
      .get(key, routineId, slot) as { record: string } | undefined;
    return row ? routineRunFromText(scope, row.record) : undefined;
  }

  #insert(key: string, run: RoutineRun): void {
    this.#db
      .stmt(
        "INSERT INTO routine_runs (scope, routine_id, slot, state, session_id, claimed_at, record) VALUES (?, ?, ?, ?, ?, ?, ?)",
      )
      .run(
        key,
        run.routineId,
        run.slot,
        run.state,
        run.sessionId,
        run.claimedAt ?? null,
        routineRunText(run),
      );
  }

  #update(key: string, run: RoutineRun): void {
    this.#db
      .stmt(
        "UPDATE routine_runs SET state = ?, session_id = ?, claimed_at = ?, record = ? WHERE scope = ? AND routine_id = ? AND slot = ?",
      )
      .run(
        run.state,
        run.sessionId,
        run.claimedAt ?? null,
        routineRunText(run),
        key,
        run.routineId,
        run.slot,
      );
  }

  async claim(input: RoutineClaim): Promise<RoutineClaimResult> {
    const { claim: c, key } = normalizeRoutineClaim(input);
    return this.#db.durable(() => {
      const t = claimTransition(this.#row(key, c.scope, c.routineId, c.slot), c);
      if (t.action === "exists") return Object.freeze({ status: "exists" as const, run: t.run });
      if (t.action === "insert") this.#insert(key, t.run);
      else this.#update(key, t.run);
      return Object.freeze({
        status: "claimed" as const,
        run: t.run,
        collecting: t.action === "update",
      });
    });
  }

  async recordMissed(input: {
    readonly scope: Scope;
    readonly routineId: string;
    readonly slot: number;
    readonly sessionId: string;
    readonly at: number;
  }): Promise<RoutineClaimResult> {
    const { run, key } = missedRun(input);
    return this.#db.durable(() => {
      const existing = this.#row(key, run.scope, run.routineId, run.slot);
      if (existing) return Object.freeze({ status: "exists" as const, run: existing });
      this.#insert(key, run);
      return Object.freeze({ status: "claimed" as const, run, collecting: false });
    });
  }

  async finish(input: RoutineFinish): Promise<RoutineRun> {
    const { finish: f, key } = normalizeRoutineFinish(input);
    return this.#db.durable(() => {
      const t = finishTransition(this.#row(key, f.scope, f.routineId, f.slot), f);
      if (t.action === "update") this.#update(key, t.run);
      return t.run;
    });
  }

  async reconcileInterrupted(input: {
    readonly claimedBefore: number;
    readonly at: number;
  }): Promise<readonly RoutineRun[]> {
    const before = validateTime("claimedBefore", input?.claimedBefore);
    const at = validateTime("at", input.at);
    return this.#db.durable(() => {
      const rows = this.#db
        .stmt(
          "SELECT scope, record FROM routine_runs WHERE state = 'running' AND claimed_at < ? ORDER BY scope, routine_id, slot",
        )
        .all(before) as RunRow[];
      const out = rows.map((r) =>
        interruptedRun(routineRunFromText(scopeFromKey(r.scope), r.record), at),
      );
      for (let i = 0; i < out.length; i++)
        this.#update((rows[i] as RunRow).scope, out[i] as RoutineRun);
      return Object.freeze(out);
    });
  }

  async resolve(input: RoutineResolve): Promise<RoutineRun> {
    const { resolve: r, key } = normalizeRoutineResolve(input);
    return this.#db.durable(() => {
      const run = resolveTransition(this.#row(key, r.scope, r.routineId, r.slot), r);
      this.#update(key, run);
      return run;
    });
  }

  async get(scope: Scope, routineId: string, slot: number): Promise<RoutineRun | undefined> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("routineId", routineId);
    const at = validateTime("slot", slot);
    return this.#db.guard(() => this.#row(key, s, id, at));
  }

  async latest(scope: Scope, routineId: string): Promise<RoutineRun | undefined> {
    const { scope: s, key } = scopeKey(scope);
    const id = validateId("routineId", routineId);
    const row = this.#db.guard(() =>
      this.#db
        .stmt(
          "SELECT record FROM routine_runs WHERE scope = ? AND routine_id = ? ORDER BY slot DESC LIMIT 1",
        )
        .get(key, id),
    ) as { record: string } | undefined;
    return row ? routineRunFromText(s, row.record) : undefined;
  }

  async list(scope: Scope, query?: RoutineRunQuery): Promise<RoutineRunPage> {
    const q = normalizeRoutineRunQuery(scope, query);
    const [negSlot, after] = q.after ?? [Number.MIN_SAFE_INTEGER, ""];
    const rows = this.#db.guard(
      () =>
        this.#db
          .stmt(
            `SELECT record FROM routine_runs WHERE scope = @key AND (@routine IS NULL OR routine_id = @routine) AND (@state IS NULL OR state = @state)
             AND (slot < @slot OR (slot = @slot AND routine_id > @after)) ORDER BY slot DESC, routine_id LIMIT @limit`,
          )
          .all({
            key: q.key,
            routine: q.routineId ?? null,
            state: q.state ?? null,
            slot: -negSlot,
            after,
            limit: q.limit + 1,
          }) as { record: string }[],
    );
    return pageOfFetched(
      rows.map((r) => routineRunFromText(q.scope, r.record)),
      q.limit,
      routineRunKey,
    );
  }
}
