import {
  type Admission,
  type CheckpointInput,
  type ClaimResumeInput,
  type ClaimResumeResult,
  type DecideInput,
  type DecideResult,
  type ParkedTurn,
  type ParkedTurnStore,
  type ParkedTurnSummary,
  type ParkInput,
  FenceError,
  type Scope,
  ScopeFencedError,
  validateId,
} from "@alma-harness/core";
import {
  type AdmissionRow,
  admissionExists,
  admissionFromRow,
  admissionOf,
  claimableFrom,
  claimedTurn,
  collectDue,
  type DueQuery,
  type DueRow,
  decideOn,
  normalizeCheckpoint,
  normalizeClaimResume,
  normalizeDecide,
  normalizePark,
  notClaimable,
  outputColumns,
  type ParkedTurnRow,
  parkedColumns,
  parkedSummaryFromRow,
  parkedTurnFromRow,
  parkedRecord,
  checkpointRecord,
  parkRefusal,
  prepareParkedList,
  RECORD_VERSION,
  scopeKey,
  summaryOf,
  type TurnOutputRow,
  turnOutputsFromRows,
  validateAskId,
} from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";
import { scopeFenced } from "./spend.js";

type FullRow = ParkedTurnRow & { readonly continuation: string };

/** A turn's columns but its continuation, under the alias `p`. */
const SUMMARY =
  "p.scope, p.root_key, p.session_id, p.admission_id, p.state, p.v, p.asks, p.parked_at, p.expires_at, p.runs";
const TURN = "SELECT * FROM parked_turns WHERE scope = ? AND root_key = ?";
const ADMISSION = "SELECT * FROM admissions WHERE scope = ? AND admission_id = ?";
const BY_ASK = `SELECT ${SUMMARY} FROM parked_asks k JOIN parked_turns p ON p.scope = k.scope AND p.root_key = k.root_key`;
const BY_PARK = "ORDER BY p.parked_at, p.root_key, p.scope";

const SQL = {
  upsert: `INSERT INTO parked_turns (scope, root_key, session_id, admission_id, state, v, asks, continuation, parked_at, expires_at, runs)
    VALUES (@scope, @rootKey, @sessionId, @admissionId, @state, @v, @asks, @continuation, @parkedAt, @expiresAt, @runs)
    ON CONFLICT (scope, root_key) DO UPDATE SET session_id = excluded.session_id, admission_id = excluded.admission_id,
      state = excluded.state, v = excluded.v, asks = excluded.asks, continuation = excluded.continuation,
      parked_at = excluded.parked_at, expires_at = excluded.expires_at, runs = excluded.runs`,
  dropAsks: "DELETE FROM parked_asks WHERE scope = ? AND root_key = ?",
  addAsk: "INSERT INTO parked_asks (ask_id, scope, root_key) VALUES (?, ?, ?)",
  addOutput: `INSERT INTO parked_outputs (scope, root_key, digest, v, message) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (scope, root_key, digest) DO NOTHING`,
  outputs:
    "SELECT digest, v, message FROM parked_outputs WHERE scope = ? AND root_key = ? ORDER BY digest",
  deadline: "UPDATE admissions SET deadline_at = ? WHERE scope = ? AND admission_id = ?",
  finish: "UPDATE admissions SET state = 'finished' WHERE scope = ? AND admission_id = ?",
  expire:
    "UPDATE admissions SET state = 'released', release_reason = 'expired' WHERE scope = ? AND admission_id = ?",
  admit: `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
    VALUES (?, ?, ?, ?, 'turn', 'active', ?, ?) RETURNING *`,
  resume:
    "UPDATE parked_turns SET state = 'resuming', admission_id = ?, runs = runs + 1 WHERE scope = ? AND root_key = ?",
  due: `SELECT ${SUMMARY}, a.deadline_at AS holder_deadline_at FROM parked_turns p
    JOIN admissions a ON a.scope = p.scope AND a.admission_id = p.admission_id
    WHERE a.state = 'active' AND (p.state = 'parked' OR p.expires_at <= @now OR a.deadline_at <= @now)
      AND (@only IS NULL OR p.scope = @only) AND (p.expires_at, p.root_key, p.scope) > (@e, @r, @s)
    ORDER BY p.expires_at, p.root_key, p.scope LIMIT @batch`,
  list: `SELECT ${SUMMARY} FROM parked_turns p WHERE p.scope >= @from AND p.scope < @to
    AND (@only IS NULL OR p.scope = @only) ${BY_PARK} LIMIT @limit`,
} as const;

/**
 * Parked turns in SQLite, beside the admissions they hold: a park, a checkpoint, a decision and a
 * claim each run in one immediate transaction (SQLite's one writer: of concurrent claims exactly
 * one wins), each a durability point, so a park, a checkpoint or a claim that returned survives a
 * crash even with grouped commits.
 */
export class SqliteParkedTurnStore implements ParkedTurnStore {
  readonly #db: SqliteDb;

  constructor(db: SqliteDb) {
    this.#db = db;
  }

  async park(input: ParkInput): Promise<ParkedTurn> {
    const p = normalizePark(input);
    const json = parkedColumns(p);
    const added = outputColumns(p.outputs ?? []);
    return this.#db.durable(() => {
      const { runs } = this.#held(p);
      this.#db.stmt(SQL.deadline).run(p.expiresAt, p.key, p.admissionId);
      this.#store(p.key, parkedRecord(p, runs, []), json, added);
      return parkedRecord(p, runs, turnOutputsFromRows(this.#outputs(p.key, p.rootKey)));
    });
  }

  async checkpoint(input: CheckpointInput): Promise<ParkedTurnSummary> {
    const c = normalizeCheckpoint(input);
    const json = parkedColumns({ asks: [], continuation: c.continuation });
    const added = outputColumns(c.outputs ?? []);
    // Not a durability point of its own: it joins the step's grouped transaction, which the runner
    // commits before the next effect (a handler, a dispatch).
    return this.#db.write(() => {
      const { admission, runs } = this.#held(c);
      const turn = checkpointRecord(c, admission.deadlineAt, runs, []);
      this.#store(c.key, turn, json, added);
      return summaryOf(turn);
    });
  }

  async get(scope: Scope, rootKey: string): Promise<ParkedTurn | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("rootKey", rootKey);
    return this.#db.guard(() => {
      const row = this.#db.stmt(TURN).get(key, id) as FullRow | undefined;
      return row && parkedTurnFromRow(row, this.#outputs(key, id));
    });
  }

  async decide(input: DecideInput): Promise<DecideResult> {
    const d = normalizeDecide(input);
    return this.#db.durable(() => {
      const row = this.#db
        .stmt(`${BY_ASK} WHERE k.scope = ? AND k.ask_id = ? ${BY_PARK} LIMIT 1`)
        .get(d.key, d.askId) as ParkedTurnRow | undefined;
      const { result, asks } = decideOn(row && parkedSummaryFromRow(row), d);
      if (row && asks)
        this.#db
          .stmt("UPDATE parked_turns SET asks = ? WHERE scope = ? AND root_key = ?")
          .run(JSON.stringify(asks), row.scope, row.root_key);
      return result;
    });
  }

  async claim(input: ClaimResumeInput): Promise<ClaimResumeResult> {
    const c = normalizeClaimResume(input);
    return this.#db.durable((): ClaimResumeResult => {
      const row = this.#db.stmt(TURN).get(c.key, c.rootKey) as FullRow | undefined;
      const turn = row && parkedTurnFromRow(row, this.#outputs(c.key, c.rootKey));
      const holder = turn && admissionOf(this.#admission(c.key, turn.admissionId));
      const from = claimableFrom(turn, holder, c.now);
      if (!turn || !holder || !from) return notClaimable(turn);
      if (this.#admission(c.key, c.admissionId)) throw admissionExists(c.admissionId);
      if (scopeFenced(this.#db, c.key)) throw new ScopeFencedError();
      this.#db.stmt(from === "parked" ? SQL.finish : SQL.expire).run(c.key, holder.admissionId);
      const fresh = this.#db
        .stmt(SQL.admit)
        .get(c.key, c.admissionId, turn.sessionId, turn.rootKey, c.now, c.deadlineAt);
      this.#db.stmt(SQL.resume).run(c.admissionId, c.key, c.rootKey);
      return claimedTurn(turn, from, admissionFromRow(fresh as AdmissionRow));
    });
  }

  async done(scope: Scope, rootKey: string, admissionId: string): Promise<boolean> {
    const { key } = scopeKey(scope);
    const root = validateId("rootKey", rootKey);
    const id = validateId("admissionId", admissionId);
    return this.#db.write(
      () =>
        this.#db
          .stmt("DELETE FROM parked_turns WHERE scope = ? AND root_key = ? AND admission_id = ?")
          .run(key, root, id).changes > 0,
    );
  }

  async due(input: Parameters<ParkedTurnStore["due"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    return collectDue(input, (q: DueQuery) =>
      this.#db.guard(
        () =>
          this.#db.stmt(SQL.due).all({
            now: q.now,
            only: q.only,
            e: q.after[0],
            r: q.after[1],
            s: q.after[2],
            batch: q.batch,
          }) as DueRow[],
      ),
    );
  }

  async list(input: Parameters<ParkedTurnStore["list"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    const l = prepareParkedList(input);
    const rows = this.#db.guard(() => this.#db.stmt(SQL.list).all(l) as ParkedTurnRow[]);
    return Object.freeze(rows.map(parkedSummaryFromRow));
  }

  async find(askId: string): Promise<readonly ParkedTurnSummary[]> {
    const id = validateAskId(askId);
    const rows = this.#db.guard(
      () => this.#db.stmt(`${BY_ASK} WHERE k.ask_id = ? ${BY_PARK}`).all(id) as ParkedTurnRow[],
    );
    return Object.freeze(rows.map(parkedSummaryFromRow));
  }

  /**
   * In a park's or a checkpoint's transaction: the run's admission, refused as `parkRefusal` says
   * (nothing written), and the runs the record keeps (the previous record's, when it was this
   * admission's).
   */
  #held(x: {
    readonly key: string;
    readonly sessionId: string;
    readonly rootKey: string;
    readonly admissionId: string;
    readonly now: number;
  }): { readonly admission: Admission; readonly runs: number } {
    const admission = admissionOf(this.#admission(x.key, x.admissionId));
    const refused = parkRefusal(admission, x, scopeFenced(this.#db, x.key));
    if (refused || !admission) throw refused ?? new FenceError();
    const before = this.#db.stmt(TURN).get(x.key, x.rootKey) as ParkedTurnRow | undefined;
    return { admission, runs: before?.admission_id === x.admissionId ? before.runs : 0 };
  }

  /**
   * The turn's row (inserted or replaced), its asks' rows (the previous record's dropped) and the
   * write's outputs (a digest the turn holds keeps its row).
   */
  #store(
    key: string,
    turn: ParkedTurn,
    json: { readonly asks: string; readonly continuation: string },
    added: ReturnType<typeof outputColumns>,
  ): void {
    this.#db.stmt(SQL.upsert).run({
      scope: key,
      rootKey: turn.rootKey,
      sessionId: turn.sessionId,
      admissionId: turn.admissionId,
      state: turn.state,
      v: RECORD_VERSION,
      asks: json.asks,
      continuation: json.continuation,
      parkedAt: turn.parkedAt,
      expiresAt: turn.expiresAt,
      runs: turn.runs,
    });
    this.#db.stmt(SQL.dropAsks).run(key, turn.rootKey);
    for (const ask of turn.asks) this.#db.stmt(SQL.addAsk).run(ask.askId, key, turn.rootKey);
    const add = this.#db.stmt(SQL.addOutput);
    for (const [i, digest] of added.digests.entries())
      add.run(key, turn.rootKey, digest, RECORD_VERSION, added.messages[i]);
  }

  #outputs(key: string, rootKey: string): TurnOutputRow[] {
    return this.#db.stmt(SQL.outputs).all(key, rootKey) as TurnOutputRow[];
  }

  #admission(key: string, admissionId: string): AdmissionRow | undefined {
    return this.#db.stmt(ADMISSION).get(key, admissionId) as AdmissionRow | undefined;
  }
}

/** Erasure: a session's parked turns (every session's of the scope without `sessionId`), their asks and outputs with them. */
export function eraseParkedRows(db: SqliteDb, key: string, sessionId?: string): void {
  if (sessionId === undefined) db.stmt("DELETE FROM parked_turns WHERE scope = ?").run(key);
  else db.stmt("DELETE FROM parked_turns WHERE scope = ? AND session_id = ?").run(key, sessionId);
}
