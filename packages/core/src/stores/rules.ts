import { ValidationError } from "../errors.js";
import { normalizeScope, type Scope, validateId } from "../scope.js";
import { canonicalJson, type JsonValue, snapshot } from "../snapshot.js";

/**
 * Rules every store implementation applies before any I/O, so memory, SQLite and PostgreSQL
 * accept and refuse exactly the same input. Each returns a detached, frozen copy or throws.
 */

const keyed = new WeakMap<Scope, { readonly scope: Scope; readonly key: string }>();

/** A validated, frozen scope and its partition key `org/uid`. */
export function scopeKey(scope: unknown): { readonly scope: Scope; readonly key: string } {
  const s = normalizeScope(scope);
  // A normalized scope is frozen, so its key never changes: remembered per scope object, for the
  // scopes callers pass again and again (a fresh one normalized just now would never be asked twice).
  const known = keyed.get(s);
  if (known !== undefined) return known;
  const out = Object.freeze({ scope: s, key: `${s.org}/${s.uid}` });
  if (s === scope) keyed.set(s, out);
  return out;
}

/** A tenant (`org`) alone, with the same rule as `Scope.org`. */
export function validateOrg(org: unknown): string {
  return normalizeScope({ org, uid: "_" }).org;
}

/** Epoch milliseconds: a safe non-negative integer (millisecond precision, no zone ambiguity). */
export function validateTime(field: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new ValidationError(
      field,
      "epoch_ms",
      `${field} must be a non-negative integer of epoch milliseconds`,
    );
  }
  return value;
}

export function validateCount(field: string, value: unknown, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new ValidationError(field, "integer", `${field} must be an integer of at least ${min}`);
  }
  return value;
}

export function validateOneOf<T extends string>(
  field: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new ValidationError(field, "one_of", `${field} must be one of ${allowed.join(", ")}`);
  }
  return value as T;
}

/** A bounded label (model names, client ids, versions): 1–200 printable ASCII, no spaces. */
export function validateName(field: string, value: unknown): string {
  return validateId(field, value);
}

/** The last day that passed `validateDay` (a pure check of a string, so one answer is remembered). */
let lastValidDay: string | undefined;

/** UTC calendar day `YYYY-MM-DD` that exists. */
export function validateDay(field: string, value: unknown): string {
  if (typeof value === "string" && value === lastValidDay) return value;
  if (typeof value !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    throw new ValidationError(field, "utc_day", `${field} must be a UTC day YYYY-MM-DD`);
  }
  const ms = Date.parse(`${value}T00:00:00.000Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw new ValidationError(field, "utc_day", `${field} is not a calendar day`);
  }
  lastValidDay = value;
  return value;
}

/** Rejects fields outside `allowed` on a plain object (closed records). */
export function closedObject(
  field: string,
  value: unknown,
  allowed: readonly string[] | ReadonlySet<string>,
): Record<string, unknown> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new ValidationError(field, "object", `${field} must be an object`);
  }
  const set = Array.isArray(allowed) ? undefined : (allowed as ReadonlySet<string>);
  for (const key of Object.keys(value)) {
    if (set ? !set.has(key) : !(allowed as readonly string[]).includes(key)) {
      // The message names what is expected, never the field that was sent (the path is for the caller).
      throw new ValidationError(
        `${field}.${key}`,
        "unknown_field",
        `${field} takes only ${[...allowed].join(", ")}`,
      );
    }
  }
  return value as Record<string, unknown>;
}

/** A page size: absent means `def`; otherwise an integer 1..`max` (over the maximum is refused, not clamped). */
export function pageLimit(value: unknown, def: number, max: number): number {
  if (value === undefined) return def;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new ValidationError("limit", "page_limit", `limit must be an integer from 1 to ${max}`);
  }
  return value;
}

export const PAGE = Object.freeze({
  sessions: { def: 50, max: 100 },
  execution: { def: 50, max: 100 },
  settlements: { def: 50, max: 100 },
  pending: { def: 50, max: 100 },
  audit: { def: 100, max: 500 },
  usageInbox: { def: 50, max: 100 },
});

export type CursorPart = string | number;

/** An opaque cursor: the sort key of the last item returned, base64url JSON. */
export function encodeCursor(parts: readonly CursorPart[]): string {
  // Parts are ids (printable ASCII) and integers, so the JSON text is ASCII and btoa is safe.
  return btoa(JSON.stringify(parts)).replaceAll("+", "-").replaceAll("/", "_").replaceAll("=", "");
}

/** Decodes a cursor made by `encodeCursor` with the given shape, or throws `ValidationError`. */
export function decodeCursor(
  cursor: unknown,
  shape: readonly ("string" | "number")[],
): readonly CursorPart[] | undefined {
  if (cursor === undefined) return undefined;
  const bad = () =>
    new ValidationError("cursor", "cursor", "cursor is not a cursor this listing issued");
  if (
    typeof cursor !== "string" ||
    cursor.length === 0 ||
    cursor.length > 1024 ||
    !/^[A-Za-z0-9_-]+$/.test(cursor)
  )
    throw bad();
  let parts: unknown;
  try {
    parts = JSON.parse(atob(cursor.replaceAll("-", "+").replaceAll("_", "/")));
  } catch {
    throw bad();
  }
  if (!Array.isArray(parts) || parts.length !== shape.length) throw bad();
  shape.forEach((kind, i) => {
    const part: unknown = parts[i];
    if (kind === "number" ? !Number.isSafeInteger(part) : typeof part !== "string") throw bad();
  });
  return parts as CursorPart[];
}

/** Lexicographic comparison of sort keys (numbers numerically, strings by code unit). */
export function compareKeys(a: readonly CursorPart[], b: readonly CursorPart[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as CursorPart;
    const y = b[i] as CursorPart;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

/** One page of an already sorted list: items strictly after `after`, `limit` of them, and a cursor when more remain. */
export function pageOf<T>(
  sorted: readonly T[],
  keyOf: (item: T) => readonly CursorPart[],
  after: readonly CursorPart[] | undefined,
  limit: number,
): { readonly items: readonly T[]; readonly nextCursor?: string } {
  const rest =
    after === undefined ? sorted : sorted.filter((item) => compareKeys(keyOf(item), after) > 0);
  const items = Object.freeze(rest.slice(0, limit));
  const last = items[items.length - 1];
  if (rest.length > limit && last !== undefined)
    return { items, nextCursor: encodeCursor(keyOf(last)) };
  return { items };
}

/** Equality of two plain-JSON values regardless of key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a as JsonValue) === canonicalJson(b as JsonValue);
}

/**
 * A detached deep-frozen copy of plain data: `snapshot` under another name.
 * @deprecated Use `snapshot` (a checked copy) or `deepFreeze` (in place) from `@alma-harness/core`.
 */
export function frozenCopy<T>(value: T): T {
  return snapshot(value) as T;
}

/** A page from rows a database fetched with `LIMIT limit + 1`: the extra row only proves more remain. */
export function pageOfFetched<T>(
  rows: readonly T[],
  limit: number,
  keyOf: (item: T) => readonly CursorPart[],
): { readonly items: readonly T[]; readonly nextCursor?: string } {
  const items = Object.freeze(rows.slice(0, limit));
  const last = items[items.length - 1];
  if (rows.length > limit && last !== undefined)
    return { items, nextCursor: encodeCursor(keyOf(last)) };
  return { items };
}

/** The sweeps' optional scope, as a partition key or `null` (every scope). */
export function onlyKey(scope: Scope | undefined): string | null {
  return scope === undefined ? null : scopeKey(scope).key;
}
