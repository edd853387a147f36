import { InvalidScopeError } from "../errors.js";
import { dataFields } from "../snapshot.js";
import { normalizeScope } from "../scope.js";
import { validateOneOf, validateTime } from "./rules.js";

/**
 * What a scope fence covers: a whole tenant (`{org}`, every person in it) or one scope
 * (`{org, uid}`). A tenant's suspension or erasure fences the org; one person's erasure fences the
 * scope. Both may be present at once; a scope is fenced while either covers it.
 */
export interface ScopeFenceTarget {
  readonly org: string;
  readonly uid?: string;
}

/** Why an operator fenced a scope (closed: the operator console and the CLI show it). */
export type ScopeFenceReason = "suspended" | "erasure" | "operator";
export const SCOPE_FENCE_REASONS: readonly ScopeFenceReason[] = Object.freeze([
  "suspended",
  "erasure",
  "operator",
]);

/** A fence as stored: its target, its reason and when it was set. */
export interface ScopeFence {
  readonly org: string;
  /** Absent for a fence on the whole org. */
  readonly uid?: string;
  readonly reason: ScopeFenceReason;
  readonly fencedAt: number;
}

/** The partition key a fence row is stored under: a scope's `org/uid`, or `org/*` for the whole org (`*` is no valid uid). */
export function fenceKey(target: ScopeFenceTarget): string {
  return `${target.org}/${target.uid ?? "*"}`;
}

/** The two fence keys that cover a scope's partition key (`org/uid`): the org's and its own. */
export function coveringFenceKeys(scopeKeyText: string): readonly [string, string] {
  return [`${scopeKeyText.slice(0, scopeKeyText.indexOf("/"))}/*`, scopeKeyText];
}

/** A stored fence row's fields back to a frozen `ScopeFence`. */
export function scopeFenceFromRow(row: {
  readonly target: string;
  readonly reason: string;
  readonly fenced_at: number | string;
}): ScopeFence {
  const slash = row.target.indexOf("/");
  const org = row.target.slice(0, slash);
  const uid = row.target.slice(slash + 1);
  return Object.freeze({
    org,
    ...(uid === "*" ? {} : { uid }),
    reason: validateOneOf("reason", row.reason, SCOPE_FENCE_REASONS),
    fencedAt: Number(row.fenced_at),
  });
}

/**
 * A fence target validated and frozen: `{org}` or `{org, uid}`, each with `Scope`'s rules, no other
 * field, no accessor. Anything else throws `InvalidScopeError` before any I/O.
 */
export function normalizeFenceTarget(target: unknown): ScopeFenceTarget {
  if (target === null || typeof target !== "object" || Array.isArray(target))
    throw new InvalidScopeError("a fence target must be an object {org, uid?}");
  let fields: Readonly<Record<string, unknown>>;
  try {
    fields = dataFields(target, "target");
  } catch {
    throw new InvalidScopeError(
      "a fence target must be a plain object of data properties {org, uid?}",
    );
  }
  for (const key of Object.keys(fields))
    if (key !== "org" && key !== "uid")
      throw new InvalidScopeError("a fence target takes only org and uid");
  if (fields.uid === undefined) {
    const { org } = normalizeScope({ org: fields.org, uid: "_" });
    return Object.freeze({ org });
  }
  const s = normalizeScope({ org: fields.org, uid: fields.uid });
  return Object.freeze({ org: s.org, uid: s.uid });
}

/** `fenceScope`'s input, validated: the target, a reason of the closed set and the time. */
export function normalizeFenceInput(input: unknown): {
  readonly target: ScopeFenceTarget;
  readonly reason: ScopeFenceReason;
  readonly now: number;
} {
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new InvalidScopeError("fenceScope takes {target, reason, now}");
  let fields: Readonly<Record<string, unknown>>;
  try {
    fields = dataFields(input, "fenceScope");
  } catch {
    throw new InvalidScopeError("fenceScope takes a plain object {target, reason, now}");
  }
  for (const key of Object.keys(fields))
    if (key !== "target" && key !== "reason" && key !== "now")
      throw new InvalidScopeError(`fenceScope does not take "${key}"`);
  return {
    target: normalizeFenceTarget(fields.target),
    reason: validateOneOf("reason", fields.reason, SCOPE_FENCE_REASONS),
    now: validateTime("now", fields.now),
  };
}
