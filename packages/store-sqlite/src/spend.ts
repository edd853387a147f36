import type { Admission, ClaimReservation, PersistentCapName } from "@alma-harness/core";
import { coveringFenceKeys, fenceRefusal, reservationRefusal } from "@alma-harness/core/stores";
import type { SqliteDb } from "./db.js";

/**
 * Money held by calls in flight, in the journal's and the settlements' own transactions (each runs
 * inside `db.write`, SQLite's one writer: no other write interleaves between the sums and the insert).
 */
export function reserve(
  db: SqliteDb,
  at: {
    readonly scopeKey: string;
    readonly org: string;
    readonly sessionId: string;
    readonly operationId: string;
    readonly now: number;
  },
  r: ClaimReservation,
): PersistentCapName | undefined {
  const use = db
    .stmt(
      `SELECT
         (SELECT COALESCE(SUM(usd_micros), 0) FROM spend_sessions WHERE scope = @scope AND session_id = @session)
         + (SELECT COALESCE(SUM(usd_micros), 0) FROM spend_reservations WHERE scope = @scope AND session_id = @session AND expires_at > @now) AS session,
         (SELECT COALESCE(SUM(usd_micros), 0) FROM spend_tenant_days WHERE org = @org AND day = @day)
         + (SELECT COALESCE(SUM(usd_micros), 0) FROM spend_reservations WHERE org = @org AND day = @day AND expires_at > @now) AS tenant_day`,
    )
    .get({ scope: at.scopeKey, session: at.sessionId, org: at.org, day: r.day, now: at.now }) as {
    session: number;
    tenant_day: number;
  };
  const refused = reservationRefusal(
    r.limits,
    { session: use.session, tenantDay: use.tenant_day },
    r.usdMicros,
  );
  if (refused) return refused;
  db.stmt(
    `INSERT INTO spend_reservations (scope, operation_id, session_id, org, day, usd_micros, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(at.scopeKey, at.operationId, at.sessionId, at.org, r.day, r.usdMicros, r.expiresAt);
  return undefined;
}

/** Releases what a call held (nothing, when it held nothing). */
export function release(db: SqliteDb, scopeKey: string, operationId: string): void {
  db.stmt("DELETE FROM spend_reservations WHERE scope = ? AND operation_id = ?").run(
    scopeKey,
    operationId,
  );
}

/**
 * The admission fence of a write (append, claim, final-result put), checked inside the write's own
 * transaction with core's one rule: `FenceError` unless the admission is active, holds `sessionId`
 * and `now` is before its deadline.
 */
export function checkFence(
  db: SqliteDb,
  scopeKey: string,
  admissionId: string,
  sessionId: string,
  now: number,
): void {
  const row = db
    .stmt(
      "SELECT state, session_id, deadline_at FROM main.admissions WHERE scope = ? AND admission_id = ?",
    )
    .get(scopeKey, admissionId) as
    | { state: Admission["state"]; session_id: string; deadline_at: number }
    | undefined;
  const refused = fenceRefusal(
    row && { state: row.state, sessionId: row.session_id, deadlineAt: row.deadline_at },
    sessionId,
    now,
    scopeFenced(db, scopeKey),
  );
  if (refused) throw refused;
}

/** Whether an operator's fence covers the scope (its org's or its own), read in the caller's transaction. */
export function scopeFenced(db: SqliteDb, scopeKey: string): boolean {
  const [org, own] = coveringFenceKeys(scopeKey);
  return (
    db.stmt("SELECT 1 FROM main.scope_fences WHERE target IN (?, ?)").get(org, own) !== undefined
  );
}
