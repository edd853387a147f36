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
import type pg from "pg";
import { asConn, type Conn } from "./conn.js";
import { fenceLock, scopeFencedIn, thenFenced } from "./fences.js";
import type { Queryable } from "./pg.js";

type FullRow = ParkedTurnRow & {
  readonly continuation: string;
  /** `[digest, v, message]` per output, in digest order (one round trip with the turn). */
  readonly outputs: readonly [string, number, string][];
};

/** A turn's columns but its continuation, under the alias `p`. */
const SUMMARY =
  "p.scope, p.root_key, p.session_id, p.admission_id, p.state, p.v, p.asks, p.parked_at, p.expires_at, p.runs";
const OUTPUTS = `SELECT coalesce(json_agg(json_build_array(o.digest, o.v, o.message) ORDER BY o.digest), '[]')
  FROM parked_outputs o WHERE o.scope = p.scope AND o.root_key = p.root_key`;
const TURN = `SELECT p.*, (${OUTPUTS}) AS outputs FROM parked_turns p WHERE p.scope = $1 AND p.root_key = $2`;
const ADMISSION = "SELECT * FROM admissions WHERE scope = $1 AND admission_id = $2";
const BY_ASK = `SELECT ${SUMMARY} FROM parked_asks k JOIN parked_turns p ON p.scope = k.scope AND p.root_key = k.root_key`;
const BY_PARK = "ORDER BY p.parked_at, p.root_key, p.scope";

const SQL = {
  before:
    "SELECT admission_id, runs FROM parked_turns WHERE scope = $1 AND root_key = $2 FOR UPDATE",
  // The turn's row, the previous record's asks dropped and the write's new outputs in one
  // statement (a digest held keeps its row); the new asks follow in the next one.
  upsert: `WITH turn AS (INSERT INTO parked_turns (scope, root_key, session_id, admission_id, state, v, asks, continuation, parked_at, expires_at, runs)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (scope, root_key) DO UPDATE SET session_id = excluded.session_id, admission_id = excluded.admission_id,
      state = excluded.state, v = excluded.v, asks = excluded.asks, continuation = excluded.continuation,
      parked_at = excluded.parked_at, expires_at = excluded.expires_at, runs = excluded.runs
    RETURNING scope, root_key),
    dropped AS (DELETE FROM parked_asks WHERE scope = $1 AND root_key = $2)
    INSERT INTO parked_outputs (scope, root_key, digest, v, message)
    SELECT t.scope, t.root_key, o.digest, $6, o.message FROM turn t, unnest($12::text[], $13::text[]) AS o(digest, message)
    ON CONFLICT (scope, root_key, digest) DO NOTHING`,
  outputs: `SELECT (${OUTPUTS}) AS outputs FROM parked_turns p WHERE p.scope = $1 AND p.root_key = $2`,
  addAsks:
    "INSERT INTO parked_asks (ask_id, scope, root_key) SELECT a, $1, $2 FROM unnest($3::text[]) AS a",
  deadline: "UPDATE admissions SET deadline_at = $1 WHERE scope = $2 AND admission_id = $3",
  finish: "UPDATE admissions SET state = 'finished' WHERE scope = $1 AND admission_id = $2",
  expire:
    "UPDATE admissions SET state = 'released', release_reason = 'expired' WHERE scope = $1 AND admission_id = $2",
  admit: `INSERT INTO admissions (scope, admission_id, session_id, root_key, kind, state, created_at, deadline_at)
    VALUES ($1, $2, $3, $4, 'turn', 'active', $5, $6) ON CONFLICT (scope, admission_id) DO NOTHING RETURNING *`,
  resume:
    "UPDATE parked_turns SET state = 'resuming', admission_id = $1, runs = runs + 1 WHERE scope = $2 AND root_key = $3",
  due: `SELECT ${SUMMARY}, a.deadline_at AS holder_deadline_at FROM parked_turns p
    JOIN admissions a ON a.scope = p.scope AND a.admission_id = p.admission_id
    WHERE a.state = 'active' AND (p.state = 'parked' OR p.expires_at <= $1 OR a.deadline_at <= $1)
      AND ($2::text IS NULL OR p.scope = $2) AND (p.expires_at, p.root_key, p.scope) > ($3::bigint, $4::text, $5::text)
    ORDER BY p.expires_at, p.root_key, p.scope LIMIT $6`,
  list: `SELECT ${SUMMARY} FROM parked_turns p WHERE p.scope >= $1 AND p.scope < $2
    AND ($3::text IS NULL OR p.scope = $3) ${BY_PARK} LIMIT $4`,
} as const;

/**
 * Parked turns in PostgreSQL, beside the admissions they hold. A park and a claim each run in one
 * transaction that takes the tenant's fence lock shared (see `fenceLock`). A claim then locks the
 * parked row, then its admission (`FOR UPDATE`): of concurrent claims the first to lock the row
 * wins, and the others, reading it again once it committed, find it `resuming` under a live
 * admission (`not_claimable`). A park or a checkpoint, whose admission is known, locks it first
 * and the row after (`held`), so concurrent writes of one run queue on the admission; one that
 * meets a claim the other way round is retried as a deadlock. A decision locks the row too, so the
 * first stands. Park, decide and claim are durability points.
 */
export class PgParkedTurnStore implements ParkedTurnStore {
  readonly #db: Conn;
  readonly #schema: string;

  /** `schema` namespaces the fence lock keys (advisory locks are database-wide). */
  constructor(pool: pg.Pool | Conn, schema = "public") {
    this.#db = asConn(pool);
    this.#schema = schema;
  }

  async park(input: ParkInput): Promise<ParkedTurn> {
    const p = normalizePark(input);
    const json = { ...parkedColumns(p), ...outputColumns(p.outputs ?? []) };
    return this.#db.transaction(
      async (tx) => {
        const { runs } = await held(tx, p, this.#db.knownUnfenced(p.key));
        await tx.query(SQL.deadline, [p.expiresAt, p.key, p.admissionId]);
        await store(tx, p.key, parkedRecord(p, runs, []), json);
        const { rows } = await tx.query<Pick<FullRow, "outputs">>(SQL.outputs, [p.key, p.rootKey]);
        return parkedRecord(p, runs, turnOutputsFromRows(outputRows(rows[0]?.outputs ?? [])));
      },
      { locks: fenceLock(this.#schema, p.scope.org, "shared"), durable: true },
    );
  }

  async checkpoint(input: CheckpointInput): Promise<ParkedTurnSummary> {
    const c = normalizeCheckpoint(input);
    const json = {
      ...parkedColumns({ asks: [], continuation: c.continuation }),
      ...outputColumns(c.outputs ?? []),
    };
    return this.#db.transaction(
      async (tx) => {
        const { admission, runs } = await held(tx, c, this.#db.knownUnfenced(c.key));
        const turn = checkpointRecord(c, admission.deadlineAt, runs, []);
        await store(tx, c.key, turn, json);
        return summaryOf(turn);
      },
      // Not a durability point: it joins the step's unit, committed before the next effect. It
      // refuses (`held`) before it writes, yet keeps its savepoint in a unit, to retry a deadlock
      // with a concurrent claim of the run (which locks the row, then the admission). It read no
      // fence under the fence lock, which its unit holds to the commit.
      {
        locks: fenceLock(this.#schema, c.scope.org, "shared"),
        stood: () => this.#db.noteUnfenced(c.key),
      },
    );
  }

  async get(scope: Scope, rootKey: string): Promise<ParkedTurn | undefined> {
    const { key } = scopeKey(scope);
    const id = validateId("rootKey", rootKey);
    const row = (await this.#db.query<FullRow>(TURN, [key, id])).rows[0];
    return row && parkedTurnFromRow(row, outputRows(row.outputs));
  }

  async decide(input: DecideInput): Promise<DecideResult> {
    const d = normalizeDecide(input);
    return this.#db.transaction(
      async (tx) => {
        const row = (
          await tx.query<ParkedTurnRow>(
            `${BY_ASK} WHERE k.scope = $1 AND k.ask_id = $2 ${BY_PARK} LIMIT 1 FOR UPDATE OF p`,
            [d.key, d.askId],
          )
        ).rows[0];
        const { result, asks } = decideOn(row && parkedSummaryFromRow(row), d);
        if (row && asks)
          await tx.query("UPDATE parked_turns SET asks = $3 WHERE scope = $1 AND root_key = $2", [
            row.scope,
            row.root_key,
            JSON.stringify(asks),
          ]);
        return result;
      },
      { durable: true },
    );
  }

  async claim(input: ClaimResumeInput): Promise<ClaimResumeResult> {
    const c = normalizeClaimResume(input);
    return this.#db.transaction(
      async (tx): Promise<ClaimResumeResult> => {
        const row = (await tx.query<FullRow>(`${TURN} FOR UPDATE OF p`, [c.key, c.rootKey]))
          .rows[0];
        const turn = row && parkedTurnFromRow(row, outputRows(row.outputs));
        const holder = turn && admissionOf(await lockAdmission(tx, c.key, turn.admissionId));
        const from = claimableFrom(turn, holder, c.now);
        if (!turn || !holder || !from) return notClaimable(turn);
        if ((await tx.query(ADMISSION, [c.key, c.admissionId])).rows[0])
          throw admissionExists(c.admissionId);
        if (await scopeFencedIn(tx, c.key)) throw new ScopeFencedError();
        await tx.query(from === "parked" ? SQL.finish : SQL.expire, [c.key, holder.admissionId]);
        const fresh = (
          await tx.query<AdmissionRow>(SQL.admit, [
            c.key,
            c.admissionId,
            turn.sessionId,
            turn.rootKey,
            c.now,
            c.deadlineAt,
          ])
        ).rows[0];
        // Another claim took the id meanwhile (in another root: this one's row is locked).
        if (!fresh) throw admissionExists(c.admissionId);
        await tx.query(SQL.resume, [c.admissionId, c.key, c.rootKey]);
        return claimedTurn(turn, from, admissionFromRow(fresh));
      },
      { locks: fenceLock(this.#schema, c.scope.org, "shared"), durable: true },
    );
  }

  async done(scope: Scope, rootKey: string, admissionId: string): Promise<boolean> {
    const { key } = scopeKey(scope);
    const root = validateId("rootKey", rootKey);
    const id = validateId("admissionId", admissionId);
    const { rowCount } = await this.#db.write(
      "DELETE FROM parked_turns WHERE scope = $1 AND root_key = $2 AND admission_id = $3",
      [key, root, id],
    );
    return (rowCount ?? 0) > 0;
  }

  async due(input: Parameters<ParkedTurnStore["due"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    return collectDue(input, async (q) => {
      const values = [q.now, q.only, ...q.after, q.batch];
      return (await this.#db.query<DueRow>(SQL.due, values)).rows;
    });
  }

  async list(input: Parameters<ParkedTurnStore["list"]>[0]): Promise<readonly ParkedTurnSummary[]> {
    const l = prepareParkedList(input);
    const { rows } = await this.#db.query<ParkedTurnRow>(SQL.list, [l.from, l.to, l.only, l.limit]);
    return Object.freeze(rows.map(parkedSummaryFromRow));
  }

  async find(askId: string): Promise<readonly ParkedTurnSummary[]> {
    const id = validateAskId(askId);
    const { rows } = await this.#db.query<ParkedTurnRow>(
      `${BY_ASK} WHERE k.ask_id = $1 ${BY_PARK}`,
      [id],
    );
    return Object.freeze(rows.map(parkedSummaryFromRow));
  }
}

/**
 * In a park's or a checkpoint's transaction (the fence lock taken shared): the parked row locked,
 * then the run's admission (`FOR UPDATE`), refused as `parkRefusal` says (nothing written); and the
 * runs the record keeps (the previous record's, when it was this admission's).
 */
async function held(
  tx: Queryable,
  x: {
    readonly key: string;
    readonly sessionId: string;
    readonly rootKey: string;
    readonly admissionId: string;
    readonly now: number;
  },
  unfenced: boolean,
): Promise<{ readonly admission: Admission; readonly runs: number }> {
  // The admission's lock first, then the scope fence in its own statement, then the turn's row
  // locked, in one round trip: concurrent writes of one run queue on the admission, so none holds
  // the row while it waits for the admission (first checkpoints of a run deadlocked that way).
  const locked = await thenFenced<AdmissionRow>(
    tx,
    `${ADMISSION} FOR UPDATE`,
    [x.key, x.admissionId],
    x.key,
    undefined,
    [[SQL.before, [x.key, x.rootKey]]],
    unfenced,
  );
  const before = locked.after[0]?.rows[0] as ParkedTurnRow | undefined;
  const admission = admissionOf(locked.rows[0]);
  const refused = parkRefusal(admission, x, locked.fenced);
  if (refused || !admission) throw refused ?? new FenceError();
  return { admission, runs: before?.admission_id === x.admissionId ? before.runs : 0 };
}

/** The outputs column (`[digest, v, message]` tuples) as output rows. */
function outputRows(tuples: FullRow["outputs"]): TurnOutputRow[] {
  return tuples.map(([digest, v, message]) => ({ digest, v, message }));
}

/**
 * The turn's row (inserted or replaced) with the write's outputs, and its asks' rows (the previous
 * record's dropped).
 */
async function store(
  tx: Queryable,
  key: string,
  turn: ParkedTurn,
  json: {
    readonly asks: string;
    readonly continuation: string;
    readonly digests: readonly string[];
    readonly messages: readonly string[];
  },
): Promise<void> {
  await tx.query(SQL.upsert, [
    key,
    turn.rootKey,
    turn.sessionId,
    turn.admissionId,
    turn.state,
    RECORD_VERSION,
    json.asks,
    json.continuation,
    turn.parkedAt,
    turn.expiresAt,
    turn.runs,
    json.digests,
    json.messages,
  ]);
  if (turn.asks.length > 0)
    await tx.query(SQL.addAsks, [key, turn.rootKey, turn.asks.map((a) => a.askId)]);
}

/** The admission locked `FOR UPDATE` (a park moves its deadline, a claim ends it). */
async function lockAdmission(
  tx: Queryable,
  key: string,
  admissionId: string,
): Promise<AdmissionRow | undefined> {
  return (await tx.query<AdmissionRow>(`${ADMISSION} FOR UPDATE`, [key, admissionId])).rows[0];
}

/** Erasure: a session's parked turns (every session's of the scope without `sessionId`), their asks and outputs with them. */
export async function eraseParkedRows(
  tx: Queryable,
  key: string,
  sessionId?: string,
): Promise<void> {
  if (sessionId === undefined) await tx.query("DELETE FROM parked_turns WHERE scope = $1", [key]);
  else
    await tx.query("DELETE FROM parked_turns WHERE scope = $1 AND session_id = $2", [
      key,
      sessionId,
    ]);
}
