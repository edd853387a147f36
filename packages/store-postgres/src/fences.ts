import { coveringFenceKeys } from "@alma-harness/core/stores";
import type pg from "pg";
import { inline } from "./literals.js";
import { lockKey, type Queryable, queryAll } from "./pg.js";

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
 * both in one round trip when `values` have safe literals (else in two, as before).
 */
export async function thenFenced<R extends pg.QueryResultRow>(
  tx: Queryable,
  text: string,
  values: readonly unknown[],
  scopeKey: string,
  schema?: string,
): Promise<{ readonly rows: R[]; readonly fenced: boolean }> {
  const lock = inline(text, values);
  const fence = inline(FENCE_READ(schema), [...coveringFenceKeys(scopeKey)]);
  if (lock === undefined || fence === undefined) {
    const { rows } = await tx.query<R>(text, values);
    return { rows, fenced: await scopeFencedIn(tx, scopeKey, schema) };
  }
  const [locked, fences] = await queryAll(tx, `${lock}; ${fence}`, 2);
  return { rows: (locked?.rows ?? []) as R[], fenced: (fences?.rows.length ?? 0) > 0 };
}
