import { createHmac, createSecretKey, type KeyObject, randomBytes } from "node:crypto";
import { AlmaError } from "./errors.js";
import { normalizeScope, type Scope, validateId } from "./scope.js";

/**
 * The one rule of the audit trails: they hold identifiers, kinds, sizes, counts, decisions and
 * keyed hashes, never free text a model or a person wrote. `TrailValue` is the only string type an
 * audit event's free-form field accepts, and only the constructors below make one, so a new trail
 * field cannot carry a patient's name by accident: the type system asks the writer which of them
 * the value is. The stores check the same shape again on append (`normalizeAuditEvent`).
 */
declare const TRAIL_VALUE: unique symbol;
export type TrailValue = string & { readonly [TRAIL_VALUE]: true };

/** The longest trail value: what an identifier may be (`validateId`). */
export const TRAIL_VALUE_MAX = 200;
/** The fewest bytes of key material `trailKey` accepts (HMAC-SHA256's own block of strength). */
export const TRAIL_KEY_MIN_BYTES = 32;

/** A value refused by a trail constructor (spaces, control characters, too long, not a count) or key material that is too short. */
export class TrailValueError extends AlmaError {
  /** Which rule the value broke: what was expected, never the value. */
  readonly rule: "identifier" | "kind" | "count" | "key";
  constructor(rule: TrailValueError["rule"], message: string) {
    super("invalid_trail_value", message);
    this.rule = rule;
  }
}

/** An identifier: 1–200 printable ASCII characters, no spaces (the `validateId` rule). */
const IDENTIFIER = /^[\x21-\x7e]{1,200}$/;
/** A vocabulary word: a letter, then up to 127 of `[A-Za-z0-9_.:-]` (`kernel.registered`, `call:main:error`). */
const KIND = /^[A-Za-z][A-Za-z0-9_.:-]{0,127}$/;

/** Whether a string has the shape every trail value has (an identifier's): what a store checks on append. */
export function isTrailShaped(value: unknown): value is TrailValue {
  return typeof value === "string" && IDENTIFIER.test(value);
}

/** An identifier the runtime or the host minted (turn, call, operation, settlement, client, model, registered tool). */
export function trailId(value: string): TrailValue {
  if (!isTrailShaped(value))
    throw new TrailValueError(
      "identifier",
      "a trail identifier is 1-200 printable ASCII characters without spaces",
    );
  return value;
}

/** A word of a closed vocabulary (a rule, a cause, a code, a field name). */
export function trailKind(value: string): TrailValue {
  if (typeof value !== "string" || !KIND.test(value))
    throw new TrailValueError("kind", "a trail kind is a letter then up to 127 of [A-Za-z0-9_.:-]");
  return value as TrailValue;
}

/** Parts joined by `:`: trail values and counts or sizes (non-negative safe integers), e.g. `provider:anthropic:results:3`. */
export function trailJoin(...parts: readonly (TrailValue | number)[]): TrailValue {
  const text = parts
    .map((part) => {
      if (typeof part === "number") {
        if (!Number.isSafeInteger(part) || part < 0)
          throw new TrailValueError(
            "count",
            "a trail count or size is a non-negative safe integer",
          );
        return String(part);
      }
      return trailId(part);
    })
    .join(":");
  return trailId(text);
}

/** Key material: at least 32 bytes (a string counts its UTF-8 bytes). */
export type TrailKeyMaterial = Uint8Array | string;

const keys = new WeakMap<TrailKey, KeyObject>();

/**
 * A deployment's trail key: HMAC-SHA256 over what a trail may only hold hashed (a session id, a
 * tool's subject or resource). Validated once; the bytes are held out of reach of enumeration and
 * JSON. One key per deployment: the same key across restarts and processes keeps trails joinable.
 */
export class TrailKey {
  private constructor(material: KeyObject) {
    keys.set(this, material);
    Object.freeze(this);
  }

  /** @internal */
  static of(material: TrailKeyMaterial): TrailKey {
    const bytes = typeof material === "string" ? new TextEncoder().encode(material) : material;
    if (!(bytes instanceof Uint8Array) || bytes.byteLength < TRAIL_KEY_MIN_BYTES) {
      throw new TrailValueError(
        "key",
        `a trail key is a Uint8Array or string of at least ${TRAIL_KEY_MIN_BYTES} bytes`,
      );
    }
    return new TrailKey(createSecretKey(Buffer.from(bytes)));
  }

  toJSON(): string {
    return "[TrailKey]";
  }
}

/** Validates key material once: a `TrailKey` passes as is, anything else must be at least 32 bytes. */
export function trailKey(material: TrailKey | TrailKeyMaterial): TrailKey {
  return material instanceof TrailKey ? material : TrailKey.of(material);
}

let processKey: TrailKey | undefined;

/**
 * The key used when a host supplies none: random, made once per process. Trails stay content-free,
 * but they are joinable (and a session's timeline findable) only within this process's lifetime:
 * a host that keeps trails supplies its own persistent key (the runtime's SQLite composition and
 * the server do).
 */
export function processTrailKey(): TrailKey {
  processKey ??= TrailKey.of(randomBytes(32));
  return processKey;
}

/** The configured key, or the per-process one when the host gave none. */
export function resolveTrailKey(material: TrailKey | TrailKeyMaterial | undefined): TrailKey {
  return material === undefined ? processTrailKey() : trailKey(material);
}

function mac(
  key: TrailKey | TrailKeyMaterial,
  domain: string,
  scope: Scope,
  value: string,
): string {
  const secret = keys.get(trailKey(key)) as KeyObject;
  const s = normalizeScope(scope);
  // JSON of strings is unambiguous: no value can shift into the next field.
  return createHmac("sha256", secret)
    .update(JSON.stringify([domain, s.org, s.uid, value]))
    .digest("hex")
    .slice(0, 32);
}

/**
 * The stored pseudonym of a session in every trail record: `sp_` and 128 bits of
 * HMAC-SHA256(key, scope, sessionId). Scope-bound (the same id in two tenants or for two people
 * differs). This is the one function that computes it: a host that queries or erases a session's
 * audit events by its real id translates through here.
 */
export function sessionPseudonym(
  key: TrailKey | TrailKeyMaterial,
  scope: Scope,
  sessionId: string,
): TrailValue {
  validateId("sessionId", sessionId);
  const k = trailKey(key);
  const s = normalizeScope(scope);
  // A session takes many turns: its pseudonym is remembered per key (bounded), one HMAC per session, not per turn.
  let seen = pseudonyms.get(k);
  if (!seen) {
    seen = new Map();
    pseudonyms.set(k, seen);
  }
  const at = `${s.org}\u0000${s.uid}\u0000${sessionId}`;
  const known = seen.get(at);
  if (known !== undefined) return known;
  const value = `sp_${mac(k, "session", s, sessionId)}` as TrailValue;
  if (seen.size >= PSEUDONYM_CACHE) seen.clear();
  seen.set(at, value);
  return value;
}

const PSEUDONYM_CACHE = 4096;
const pseudonyms = new WeakMap<TrailKey, Map<string, TrailValue>>();

/** A keyed, scope-bound hash of a value the trail may only hold hashed (a tool's subject or resource): `kh_` and 128 bits. */
export function trailHash(
  key: TrailKey | TrailKeyMaterial,
  scope: Scope,
  value: string,
): TrailValue {
  if (typeof value !== "string")
    throw new TrailValueError("identifier", "a hashed trail value is a string");
  return `kh_${mac(key, "value", scope, value)}` as TrailValue;
}

/**
 * The keyed mark an erased session's tombstones and receipts carry (`e2_` and 128 bits of
 * HMAC-SHA256(key, scope, sessionId)): without the deployment's key a guessed id (a phone number)
 * cannot be tested against it. See `sessionMarker` in the stores' erasure contract.
 */
export function erasedSessionKeyedMark(
  key: TrailKey | TrailKeyMaterial,
  scope: Scope,
  sessionId: string,
): string {
  validateId("sessionId", sessionId);
  return `e2_${mac(key, "erased", scope, sessionId)}`;
}

/**
 * The MAC of a parked ask's decision token (issue 25): 128 bits of HMAC-SHA256 with the
 * deployment's trail key, bound to the scope and the token's payload (ask id, digest, expiry).
 */
export function askTokenMac(
  key: TrailKey | TrailKeyMaterial,
  scope: Scope,
  payload: string,
): string {
  return mac(key, "ask_token", scope, payload);
}
