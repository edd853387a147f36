import type { Admission } from "@alma-harness/core";
import type { ExecutionRow } from "@alma-harness/core/stores";

// The execution journal's statements (`execution.ts`), built once.

export const BY_ID = "SELECT * FROM execution WHERE scope = $1 AND operation_id = $2";

/** A fenced transition: matches only the current token in the state it needs. */
export const STEP = `UPDATE execution SET state = $1, evidence = COALESCE($2, evidence), not_dispatched_cause = COALESCE($3, not_dispatched_cause),
    settlement_id = COALESCE($4, settlement_id), updated_at = $5
  WHERE scope = $6 AND operation_id = $7 AND fence_token = $8 AND state = $9 RETURNING *`;

/**
 * A known transition (`#known`): the row's columns set under the fence the transaction holds (a
 * transition of its own may have gone already, so the state is not matched), failing (22012) when
 * it matches no row.
 */
export const KNOWN_STEP = `WITH up AS (UPDATE execution SET state = $1, evidence = $2, not_dispatched_cause = $3,
    settlement_id = $4, updated_at = $5
  WHERE scope = $6 AND operation_id = $7 AND fence_token = $8 RETURNING 1)
  SELECT 1 / count(*) FROM up`;

/**
 * `STEP` for the dispatch: it matches nothing while a scope fence covers the record's scope (the
 * fence keys `$10`, `$11`), read in this statement's snapshot, which starts after the fence lock.
 */
export const DISPATCH = `${STEP.slice(0, STEP.lastIndexOf(" RETURNING *"))}
    AND NOT EXISTS (SELECT 1 FROM scope_fences WHERE target IN ($10, $11)) RETURNING *`;

/** `STEP`, and in the same statement the deletion of the reservation the moved row held (cancelPrepared). */
export const STEP_RELEASING = `WITH up AS (${STEP}),
  released AS (DELETE FROM spend_reservations h USING up WHERE h.scope = up.scope AND h.operation_id = up.operation_id)
  SELECT * FROM up`;

/** What the claim statement returns: the row (inserted or already there) and what the checks read. */
export interface ClaimRow extends ExecutionRow {
  readonly inserted: boolean;
  readonly fence_state?: Admission["state"] | null;
  readonly fence_session_id?: string | null;
  readonly fence_deadline_at?: number | null;
  readonly use_session?: number;
  readonly use_tenant_day?: number;
}

/**
 * The claim as one statement (see `PgExecutionStore.claim`). `$1`–`$8` are the claim; the
 * admission id and the reservation's fields follow, numbered by which of them the claim has.
 */
function claimStatement(fenced: boolean, reserving: boolean): string {
  let n = 9;
  const admission = fenced ? `$${n++}` : "";
  const [org, day, micros, expires] = reserving ? [`$${n++}`, `$${n++}`, `$${n++}`, `$${n++}`] : [];
  const ctes = [
    `ins AS (
       INSERT INTO execution (scope, operation_id, session_id, turn_id, claim, created_at, deadline_at, state, fence_token, v, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'prepared', 1, $8, $6) ON CONFLICT (scope, operation_id) DO NOTHING RETURNING *)`,
    // Held until commit: the admission cannot end (finish, mark uncertain, release) under a claim in flight.
    ...(fenced
      ? [
          `fence AS MATERIALIZED (SELECT state AS fence_state, session_id AS fence_session_id, deadline_at AS fence_deadline_at
             FROM admissions WHERE scope = $1 AND admission_id = ${admission} FOR SHARE)`,
        ]
      : []),
    // Written only with a new claim; rolled back with it when a check refuses.
    ...(reserving
      ? [
          `held AS (INSERT INTO spend_reservations (scope, operation_id, session_id, org, day, usd_micros, expires_at)
             SELECT scope, operation_id, session_id, ${org}, ${day}, ${micros}, ${expires} FROM ins)`,
        ]
      : []),
  ];
  // Settled plus still held (expires_at after the claim's createdAt), read in this statement's
  // snapshot, which starts after the reservation locks are held: no reserver of either key is in flight.
  const use = reserving
    ? `, COALESCE((SELECT usd_micros FROM spend_sessions WHERE scope = $1 AND session_id = $3), 0)
         + (SELECT COALESCE(sum(usd_micros), 0)::bigint FROM spend_reservations WHERE scope = $1 AND session_id = $3 AND expires_at > $6) AS use_session,
       COALESCE((SELECT usd_micros FROM spend_tenant_days WHERE org = ${org} AND day = ${day}), 0)
         + (SELECT COALESCE(sum(usd_micros), 0)::bigint FROM spend_reservations WHERE org = ${org} AND day = ${day} AND expires_at > $6) AS use_tenant_day`
    : "";
  return `WITH ${ctes.join(", ")}
    SELECT e.*${fenced ? ", fence.*" : ""}${use}
    FROM (SELECT ins.*, true AS inserted FROM ins
          UNION ALL SELECT x.*, false AS inserted FROM execution x WHERE x.scope = $1 AND x.operation_id = $2) e
    ${fenced ? "LEFT JOIN fence ON true" : ""}`;
}

export const CLAIM_SQL = {
  plain: claimStatement(false, false),
  fenced: claimStatement(true, false),
  reserving: claimStatement(false, true),
  both: claimStatement(true, true),
};
