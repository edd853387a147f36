import { InvalidIdError, InvalidScopeError } from "./errors.js";
import { dataFields, snapshot } from "./snapshot.js";

/**
 * The tenant a turn runs for: `org` is the tenant, `uid` the person inside it. The host derives it
 * from a verified identity and binds it by closure; the model never sees or chooses it.
 */
export interface Scope {
  readonly org: string;
  readonly uid: string;
}

/** Scope parts: 1–64 characters of `[A-Za-z0-9_.-]`, not starting with a dot. */
const SCOPE_PART = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;

/**
 * Scopes this function returned. Only it adds to the set, and only a frozen `{org, uid}` it just
 * checked, so a member is already normalized: passing one back returns it as is, with no re-check.
 */
const normalized = new WeakSet<object>();

/**
 * Validates a scope and returns a frozen copy with exactly `org` and `uid`. A scope this function
 * already returned is returned unchanged, so one scope object can travel a whole turn cheaply.
 */
export function normalizeScope(scope: unknown): Scope {
  if (scope === null || typeof scope !== "object" || Array.isArray(scope)) {
    throw new InvalidScopeError("scope must be an object {org, uid}");
  }
  if (normalized.has(scope)) return scope as Scope;
  // Read through the snapshot's own rules (no getter runs, no Proxy, no hidden or symbol key).
  let fields: Readonly<Record<string, unknown>>;
  try {
    fields = dataFields(scope, "scope");
  } catch {
    throw new InvalidScopeError("scope must be a plain object of data properties {org, uid}");
  }
  for (const key of Object.keys(fields)) {
    if (key !== "org" && key !== "uid") throw new InvalidScopeError("scope takes only org and uid");
  }
  const org = readPart(fields, "org");
  const uid = readPart(fields, "uid");
  // A snapshot of checked strings: frozen plain data that later snapshots keep as is.
  const out = snapshot({ org, uid }) as unknown as Scope;
  normalized.add(out);
  return out;
}

function readPart(fields: Readonly<Record<string, unknown>>, key: "org" | "uid"): string {
  const value = fields[key];
  if (value === undefined) throw new InvalidScopeError(`scope.${key} is required`);
  if (typeof value !== "string" || !SCOPE_PART.test(value)) {
    throw new InvalidScopeError(
      `scope.${key} must be 1-64 characters of [A-Za-z0-9_.-], not starting with "."`,
    );
  }
  return value;
}

/** The canonical path of a scope, `org/uid`: the key every store partitions by. */
export function scopePath(scope: Scope): string {
  const s = normalizeScope(scope);
  return `${s.org}/${s.uid}`;
}

/** Ids (sessions, keys, operations, settlements): 1–200 printable ASCII characters, no spaces. */
const ID = /^[\x21-\x7e]{1,200}$/;

/** The last ids that passed (a pure check of a string): a turn checks the same few ids many times. */
const recentIds: string[] = ["", "", "", "", "", "", "", ""];
let nextRecent = 0;

export function validateId(field: string, value: unknown): string {
  if (typeof value !== "string")
    throw new InvalidIdError(field, "must be 1-200 printable ASCII characters without spaces");
  for (let i = 0; i < recentIds.length; i++)
    if (recentIds[i] === value && value !== "") return value;
  if (!ID.test(value))
    throw new InvalidIdError(field, "must be 1-200 printable ASCII characters without spaces");
  recentIds[nextRecent] = value;
  nextRecent = (nextRecent + 1) % recentIds.length;
  return value;
}
