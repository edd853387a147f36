import { ValidationError } from "./errors.js";

/** Plain JSON data, as every boundary of Alma accepts it. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

export interface SnapshotLimits {
  /** Deepest container nesting: `{}` is depth 1, `{a: []}` depth 2. Default 64. */
  readonly maxDepth?: number;
  /** Every value counts as one node (containers, keys' values, scalars). Default 100,000. */
  readonly maxNodes?: number;
  /** Largest single string (or object key), in UTF-8 bytes. Default 1 MiB. */
  readonly maxStringBytes?: number;
  /** Sum of all strings and keys, in UTF-8 bytes. Default 8 MiB. */
  readonly maxTotalBytes?: number;
}

export const DEFAULT_SNAPSHOT_LIMITS: Required<SnapshotLimits> = Object.freeze({
  maxDepth: 64,
  maxNodes: 100_000,
  maxStringBytes: 1024 * 1024,
  maxTotalBytes: 8 * 1024 * 1024,
});

export type SnapshotRule =
  | "accessor"
  | "symbol_key"
  | "hidden_property"
  | "cycle"
  | "sparse_array"
  | "array_property"
  | "non_plain"
  | "non_finite"
  | "unsupported_type"
  | "depth"
  | "nodes"
  | "string_bytes"
  | "total_bytes";

/** The one typed error of the snapshot normalizer: `path` is where, `rule` is which rule broke. */
export class SnapshotError extends ValidationError {
  declare readonly rule: SnapshotRule;
  constructor(path: string, rule: SnapshotRule, detail: string) {
    super(path, rule, `${path}: ${detail} (${rule})`);
    this.name = "SnapshotError";
  }
}

interface Walk {
  readonly limits: Required<SnapshotLimits>;
  nodes: number;
  bytes: number;
  readonly ancestors: Set<object>;
}

/**
 * Turns untrusted input into a detached, deeply frozen plain-JSON copy, or throws a
 * `SnapshotError` naming the path and the rule. Each property descriptor is read exactly once and
 * only its data value is used, so a getter, setter or proxy cannot show one value to the check and
 * another to the copy. Object properties whose value is `undefined` are omitted, as JSON does;
 * `-0` becomes `0`. Nothing is half-applied: the caller either gets the whole copy or an error.
 */
export function snapshot(value: unknown, limits: SnapshotLimits = {}): JsonValue {
  const walk: Walk = {
    limits: resolveLimits(limits),
    nodes: 0,
    bytes: 0,
    ancestors: new Set(),
  };
  return copy(value, "$", 0, walk);
}

/**
 * Fills absent (or `undefined`) limits with the defaults and rejects a limit that is not a
 * non-negative safe integer: `NaN` or `Infinity` would otherwise switch a check off.
 */
function resolveLimits(limits: SnapshotLimits): Required<SnapshotLimits> {
  const out = { ...DEFAULT_SNAPSHOT_LIMITS };
  for (const key of Object.keys(DEFAULT_SNAPSHOT_LIMITS) as (keyof SnapshotLimits)[]) {
    const given: unknown = limits[key];
    if (given === undefined) continue;
    if (typeof given !== "number" || !Number.isSafeInteger(given) || given < 0) {
      throw new ValidationError(`limits.${key}`, "limit", `limits.${key} must be a non-negative safe integer`);
    }
    out[key] = given;
  }
  return out;
}

/** `snapshot` for values that must be a JSON object at the root. */
export function snapshotObject(value: unknown, path = "$", limits: SnapshotLimits = {}): JsonObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SnapshotError(path, "unsupported_type", "must be a plain object");
  }
  return snapshot(value, limits) as JsonObject;
}

function copy(value: unknown, path: string, depth: number, walk: Walk): JsonValue {
  walk.nodes += 1;
  if (walk.nodes > walk.limits.maxNodes) {
    throw new SnapshotError(path, "nodes", `more than ${walk.limits.maxNodes} nodes`);
  }
  switch (typeof value) {
    case "string":
      countString(value, path, walk);
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new SnapshotError(path, "non_finite", "numbers must be finite");
      return value === 0 ? 0 : value;
    case "boolean":
      return value;
    case "object":
      if (value === null) return null;
      return copyContainer(value, path, depth + 1, walk);
    default:
      throw new SnapshotError(path, "unsupported_type", `a ${typeof value} is not JSON data`);
  }
}

function copyContainer(value: object, path: string, depth: number, walk: Walk): JsonValue {
  if (depth > walk.limits.maxDepth) {
    throw new SnapshotError(path, "depth", `nesting deeper than ${walk.limits.maxDepth}`);
  }
  if (walk.ancestors.has(value)) throw new SnapshotError(path, "cycle", "the value contains itself");
  walk.ancestors.add(value);
  try {
    return Array.isArray(value) ? copyArray(value, path, depth, walk) : copyObject(value, path, depth, walk);
  } finally {
    walk.ancestors.delete(value);
  }
}

function copyArray(value: readonly unknown[], path: string, depth: number, walk: Walk): JsonValue {
  if (Object.getPrototypeOf(value) !== Array.prototype) {
    throw new SnapshotError(path, "non_plain", "arrays must be plain arrays");
  }
  const keys = Reflect.ownKeys(value);
  const length = value.length;
  if (keys.length !== length + 1) {
    for (const key of keys) {
      if (typeof key === "symbol") throw new SnapshotError(path, "symbol_key", "symbol keys are not JSON");
    }
    const named = keys.find((k) => k !== "length" && !isIndex(k as string, length));
    if (named !== undefined) {
      throw new SnapshotError(path, "array_property", `arrays may not carry the named property "${String(named)}"`);
    }
    throw new SnapshotError(path, "sparse_array", "arrays may not have holes");
  }
  const out: JsonValue[] = new Array(length);
  for (let i = 0; i < length; i++) {
    const itemPath = `${path}[${i}]`;
    const descriptor = Object.getOwnPropertyDescriptor(value, i);
    if (descriptor === undefined) throw new SnapshotError(itemPath, "sparse_array", "arrays may not have holes");
    if (!("value" in descriptor)) throw new SnapshotError(itemPath, "accessor", "getters and setters are not data");
    out[i] = copy(descriptor.value, itemPath, depth, walk);
  }
  return Object.freeze(out);
}

function copyObject(value: object, path: string, depth: number, walk: Walk): JsonValue {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    throw new SnapshotError(path, "non_plain", "only plain objects are data (no class instances)");
  }
  const out: Record<string, JsonValue> = {};
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === "symbol") throw new SnapshotError(path, "symbol_key", "symbol keys are not JSON");
    const keyPath = `${path}.${key}`;
    const descriptor = Object.getOwnPropertyDescriptor(value, key);
    if (descriptor === undefined) continue;
    if (!("value" in descriptor)) throw new SnapshotError(keyPath, "accessor", "getters and setters are not data");
    if (!descriptor.enumerable) throw new SnapshotError(keyPath, "hidden_property", "non-enumerable properties are not data");
    if (descriptor.value === undefined) continue;
    countString(key, keyPath, walk);
    Object.defineProperty(out, key, {
      value: copy(descriptor.value, keyPath, depth, walk),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return Object.freeze(out);
}

function isIndex(key: string, length: number): boolean {
  const n = Number(key);
  return Number.isInteger(n) && n >= 0 && n < length && String(n) === key;
}

function countString(text: string, path: string, walk: Walk): void {
  const bytes = utf8Length(text);
  if (bytes > walk.limits.maxStringBytes) {
    throw new SnapshotError(path, "string_bytes", `a string over ${walk.limits.maxStringBytes} bytes`);
  }
  walk.bytes += bytes;
  if (walk.bytes > walk.limits.maxTotalBytes) {
    throw new SnapshotError(path, "total_bytes", `strings total over ${walk.limits.maxTotalBytes} bytes`);
  }
}

/** UTF-8 length without allocating; a lone surrogate counts as the 3 bytes of U+FFFD. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Stable JSON text of a snapshotted value (keys sorted), for hashing and equality of bindings. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const obj = value as JsonObject;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k] as JsonValue)}`).join(",")}}`;
}
