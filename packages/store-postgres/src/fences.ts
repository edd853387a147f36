import { coveringFenceKeys } from "@alma-harness/core/stores";
import type pg from "pg";
import { lockKey, type Queryable, queryEach, type Statement } from "./pg.js";

/**
 * The tenant's fence lock (advisory locks are database-wide: `schema` namespaces the key). An
 * admission and the journal's claim and dispatch take it shared in their transaction's first round
 * trip, `fenceScope` exclusive before its insert. So a fence waits for every such write in flight,
 * and one that waits behind a fence reads the fence in a statement that starts after the fence
 * committed: none lands past a fence that returned. A transaction that took it shared (its claim)
 * takes it again at once, so a claim and a dispatch in one grouped unit never wait on a fence
 * waiting on them.
 */
export function fenceLock(schema: string, org: string, mode: "shared" | "exclusive"): string {
  return `SELECT pg_advisory_xact_lock${mode === "shared" ? "_shared" : ""}(${lockKey(schema, "scope-fence", org)})`;
}

/** The fence read: a fence on the scope's org or on the scope itself (`coveringFenceKeys`). */
const FENCE_READ = (schema?: string) =>
  `SELECT 1 FROM ${schema === undefined ? "" : `${schema}.`}scope_fences WHERE target IN ($1, $2)`;

/**
 * Whether an operator's fence covers the scope (`org/*` or its own `org/uid`). A fenced write runs
 * it as its own statement after reading its admission `FOR SHARE`: under READ COMMITTED the new
 * statement's snapshot sees a fence that committed while the write waited for that lock, which a
 * subquery of the locking statement would not. `schema` qualifies the table for a store whose
 * search_path is another schema (the root results).
 */
export async function scopeFencedIn(
  tx: Queryable,
  scopeKey: string,
  schema?: string,
): Promise<boolean> {
  const { rows } = await tx.query(FENCE_READ(schema), [...coveringFenceKeys(scopeKey)]);
  return rows.length > 0;
}

/**
 * `text` (the statement that locks what the write is fenced by), then whether a fence covers the
 * scope, read by a statement of its own after it (a fresh snapshot, as `scopeFencedIn` requires),
 * then `then` (statements of the same write that need nothing read before them), all in one round
 * trip when every value has a safe literal (`queryEach`); `after` holds the results of `then`.
 * `unfenced`: the transaction read already, under the tenant's fence lock it still holds, that no
 * fence covers the scope (`Conn.knownUnfenced`); no fence can be added before its end, so the read
 * is not sent again.
 */
export async function thenFenced<R extends pg.QueryResultRow>(
  tx: Queryable,
  text: string,
  values: readonly unknown[],
  scopeKey: string,
  schema?: string,
  then: readonly Statement[] = [],
  unfenced = false,
): Promise<{ readonly rows: R[]; readonly fenced: boolean; readonly after: pg.QueryResult[] }> {
  if (unfenced) {
    const [locked, ...after] = await queryEach(tx, [[text, values], ...then]);
    return { rows: (locked?.rows ?? []) as R[], fenced: false, after };
  }
  const [locked, fences, ...after] = await queryEach(tx, [
    [text, values],
    [FENCE_READ(schema), [...coveringFenceKeys(scopeKey)]],
    ...then,
  ]);
  return {
    rows: (locked?.rows ?? []) as R[],
    fenced: (fences?.rows.length ?? 0) > 0,
    after,
  };
}
