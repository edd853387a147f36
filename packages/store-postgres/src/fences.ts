import { coveringFenceKeys } from "@alma-harness/core/stores";
import { lockKey, type Queryable } from "./pg.js";

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
  const [org, own] = coveringFenceKeys(scopeKey);
  const table = schema === undefined ? "scope_fences" : `${schema}.scope_fences`;
  const { rows } = await tx.query(`SELECT 1 FROM ${table} WHERE target IN ($1, $2)`, [org, own]);
  return rows.length > 0;
}
