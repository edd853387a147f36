import { coveringFenceKeys } from "@alma-harness/core/stores";
import type { Queryable } from "./pg.js";

/**
 * Whether an operator's fence covers the scope (`org/*` or its own `org/uid`). A fenced write runs
 * it as its own statement after reading its admission `FOR SHARE`: under READ COMMITTED the new
 * statement's snapshot sees a fence that committed while the write waited for that lock, which a
 * subquery of the locking statement would not. `schema` qualifies the table for a store whose
 * search_path is another schema (the root results).
 */
export async function scopeFencedIn(tx: Queryable, scopeKey: string, schema?: string): Promise<boolean> {
  const [org, own] = coveringFenceKeys(scopeKey);
  const table = schema === undefined ? "scope_fences" : `${schema}.scope_fences`;
  const { rows } = await tx.query(`SELECT 1 FROM ${table} WHERE target IN ($1, $2)`, [org, own]);
  return rows.length > 0;
}
