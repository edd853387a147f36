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
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import type { Queryable } from "./pg.js";

/** Routines in PostgreSQL (`routines`, migration 0008). */
export class PgRoutineStore implements RoutineStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async put(input: RoutineInput): Promise<RoutinePutResult> {
    const { routine, key } = normalizeRoutine(input);
    return this.#db.transaction(
      async (tx) => {
        // Lock the slot of the id (an absent row too) so two puts of one routine serialize.
        await tx.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
          `alma:routine:${key} ${routine.id}`,
        ]);
        const { rows } = await tx.query<{ record: string }>(
          "SELECT record FROM routines WHERE scope = $1 AND id = $2",
          [key, routine.id],
        );
        const stored = rows[0] ? routineFromText(routine.scope, rows[0].record) : undefined;
        const result = routineUpdate(stored, routine);
        if (result.status !== "unchanged") {
          await tx.query(
            "INSERT INTO routines (scope, id, record) VALUES ($1, $2, $3) ON CONFLICT (scope, id) DO UPDATE SET record = excluded.record",
            [key, routine.id, routineText(result.routine)],
          );
        }
        return result;
      },
      { durable: true },
    );
  }

  async get(scope: Scope, id: string): Promise<Routine | undefined> {
    const ref = normalizeRoutineRef(scope, id);
    const { rows } = await this.#db.query<{ record: string }>(
      "SELECT record FROM routines WHERE scope = $1 AND id = $2",
      [ref.key, ref.id],
    );
    return rows[0] ? routineFromText(ref.scope, rows[0].record) : undefined;
  }

  async remove(scope: Scope, id: string): Promise<boolean> {
    const ref = normalizeRoutineRef(scope, id);
    const { rows } = await this.#db.write<{ n: number }>(
      "DELETE FROM routines WHERE scope = $1 AND id = $2 RETURNING 1 AS n",
      [ref.key, ref.id],
      { durable: true },
    );
    return rows.length > 0;
  }

  async list(
    scope: Scope,
    query?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<RoutinePage> {
    const { scope: s, key } = scopeKey(scope);
    const q = normalizeRoutineQuery(query, false);
    const { rows } = await this.#db.query<{ record: string }>(
      "SELECT record FROM routines WHERE scope = $1 AND id > $2 ORDER BY id LIMIT $3",
      [key, q.after?.[0] ?? "", q.limit + 1],
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
    const { rows } = await this.#db.query<{ scope: string; record: string }>(
      "SELECT scope, record FROM routines WHERE (scope, id) > ($1, $2) ORDER BY scope, id LIMIT $3",
      [k, id, q.limit + 1],
    );
    return pageOfFetched(
      rows.map((r) => routineFromText(scopeFromKey(r.scope), r.record)),
      q.limit,
      (r) => routineCursorKey(r, true),
    );
  }
}

const LOCKED =
  "SELECT record FROM routine_runs WHERE scope = $1 AND routine_id = $2 AND slot = $3 FOR UPDATE";
const INSERT = `INSERT INTO routine_runs (scope, routine_id, slot, state, session_id, claimed_at, record) VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (scope, routine_id, slot) DO NOTHING RETURNING 1 AS n`;
const UPDATE =
  "UPDATE routine_runs SET state = $4, session_id = $5, claimed_at = $6, record = $7 WHERE scope = $1 AND routine_id = $2 AND slot = $3";

const values = (key: string, run: RoutineRun) => [
  key,
  run.routineId,
  run.slot,
  run.state,
  run.sessionId,
  run.claimedAt ?? null,
  routineRunText(run),
];

/**
 * Routine runs in PostgreSQL (`routine_runs`, migration 0008). Each write is one transaction that
 * locks the slot's row (`FOR UPDATE`) and applies core's transition; an absent row is claimed by an
 * insert that at most one transaction wins (`ON CONFLICT DO NOTHING`): a loser reads the winner's
 * committed row under its lock and answers `exists` (or collects a `submitted` one). Each write is a
 * durability point, so a claim is committed before the run's work starts.
 */
export class PgRoutineRunStore implements RoutineRunStore {
  readonly #db: Conn;

  constructor(pool: pg.Pool | Conn) {
    this.#db = asConn(pool);
  }

  async #locked(
    tx: Queryable,
    key: string,
    scope: Scope,
    routineId: string,
    slot: number,
  ): Promise<RoutineRun | undefined> {
    const { rows } = await tx.query<{ record: string }>(LOCKED, [key, routineId, slot]);
    return rows[0] ? routineRunFromText(scope, rows[0].record) : undefined;
  }

  async claim(input: RoutineClaim): Promise<RoutineClaimResult> {
    const { claim: c, key } = normalizeRoutineClaim(input);
    return this.#db.transaction(
      async (tx) => {
        let existing = await this.#locked(tx, key, c.scope, c.routineId, c.slot);
        if (existing === undefined) {
          const t = claimTransition(undefined, c);
          const { rows } = await tx.query(INSERT, values(key, t.run));
          if (rows.length === 1)
            return Object.freeze({ status: "claimed" as const, run: t.run, collecting: false });
          // Another transaction inserted it first and has committed: its row, under the lock.
          existing = await this.#locked(tx, key, c.scope, c.routineId, c.slot);
        }
        const t = claimTransition(existing, c);
        if (t.action !== "update") return Object.freeze({ status: "exists" as const, run: t.run });
        await tx.query(UPDATE, values(key, t.run));
        return Object.freeze({ status: "claimed" as const, run: t.run, collecting: true });
      },
      { durable: true },
    );
  }

  async recordMissed(input: {
    readonly scope: Scope;
    readonly routineId: string;
    readonly slot: number;
    readonly sessionId: string;
    readonly at: number;
  }): Promise<RoutineClaimResult> {
    const { run, key } = missedRun(input);
    return this.#db.transaction(
      async (tx) => {
        const { rows } = await tx.query(INSERT, values(key, run));
        if (rows.length === 1)
          return Object.freeze({ status: "claimed" as const, run, collecting: false });
        const existing = await this.#locked(tx, key, run.scope, run.routineId, run.slot);
        return Object.freeze({ status: "exists" as const, run: existing ?? run });
      },
      { durable: true },
    );
  }

  async finish(input: RoutineFinish): Promise<RoutineRun> {
    const { finish: f, key } = normalizeRoutineFinish(input);
    return this.#db.transaction(
      async (tx) => {
        const t = finishTransition(await this.#locked(tx, key, f.scope, f.routineId, f.slot), f);
        if (t.action === "update") await tx.query(UPDATE, values(key, t.run));
        return t.run;
      },
      { durable: true },
    );
  }

  async reconcileInterrupted(input: {
    readonly claimedBefore: number;
    readonly at: number;
  }): Promise<readonly RoutineRun[]> {
    const before = validateTime("claimedBefore", input?.claimedBefore);
    const at = validateTime("at", input.at);
    return this.#db.transaction(
      async (tx) => {
        const { rows } = await tx.query<{ scope: string; record: string }>(
          "SELECT scope, record FROM routine_runs WHERE state = 'running' AND claimed_at < $1 ORDER BY scope, routine_id, slot FOR UPDATE",
          [before],
        );
        const out: RoutineRun[] = [];
        for (const row of rows) {
          const run = interruptedRun(routineRunFromText(scopeFromKey(row.scope), row.record), at);
          await tx.query(UPDATE, values(row.scope, run));
          out.push(run);
        }
        return Object.freeze(out);
      },
      { durable: true },
    );
  }

  async resolve(input: RoutineResolve): Promise<RoutineRun> {
    const { resolve: r, key } = normalizeRoutineResolve(input);
    return this.#db.transaction(
      async (tx) => {
        const run = resolveTransition(await this.#locked(tx, key, r.scope, r.routineId, r.slot), r);
        await tx.query(UPDATE, values(key, run));
        return run;
      },
      { durable: true },
    );
  }

  async get(scope: Scope, routineId: string, slot: number): Promise<RoutineRun | undefined> {
    const { scope: s, key } = scopeKey(scope);
    const { rows } = await this.#db.query<{ record: string }>(
      "SELECT record FROM routine_runs WHERE scope = $1 AND routine_id = $2 AND slot = $3",
      [key, validateId("routineId", routineId), validateTime("slot", slot)],
    );
    return rows[0] ? routineRunFromText(s, rows[0].record) : undefined;
  }

  async latest(scope: Scope, routineId: string): Promise<RoutineRun | undefined> {
    const { scope: s, key } = scopeKey(scope);
    const { rows } = await this.#db.query<{ record: string }>(
      "SELECT record FROM routine_runs WHERE scope = $1 AND routine_id = $2 ORDER BY slot DESC LIMIT 1",
      [key, validateId("routineId", routineId)],
    );
    return rows[0] ? routineRunFromText(s, rows[0].record) : undefined;
  }

  async list(scope: Scope, query?: RoutineRunQuery): Promise<RoutineRunPage> {
    const q = normalizeRoutineRunQuery(scope, query);
    const [negSlot, after] = q.after ?? [Number.MIN_SAFE_INTEGER, ""];
    const { rows } = await this.#db.query<{ record: string }>(
      `SELECT record FROM routine_runs WHERE scope = $1 AND ($2::text IS NULL OR routine_id = $2) AND ($3::text IS NULL OR state = $3)
       AND (slot < $4 OR (slot = $4 AND routine_id > $5)) ORDER BY slot DESC, routine_id LIMIT $6`,
      [q.key, q.routineId ?? null, q.state ?? null, -negSlot, after, q.limit + 1],
    );
    return pageOfFetched(
      rows.map((r) => routineRunFromText(q.scope, r.record)),
      q.limit,
      routineRunKey,
    );
  }
}
