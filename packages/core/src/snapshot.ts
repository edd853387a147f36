import { ValidationError } from "./errors.js";
import { utf8Length } from "./utf8.js";

export { utf8Length };

/** Plain JSON data, as every boundary of Alma accepts it. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };
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
  | "total_bytes"
  | "proxy"
  | "unreadable";

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
  /** Deepest container level reached and longest string seen: the copy's certificate. */
  deepest: number;
  longest: number;
  /** Containers from the root to here (cycle check); depth is small, so a scan beats a Set. */
  readonly ancestors: object[];
  /** Keys and indexes from the root to here; the path text is built only when a rule breaks. */
  readonly path: (string | number)[];
  /** A caller's rule over the same walk (`snapshotOnce`): told each string value and each certified container kept. */
  readonly visit?: SnapshotVisit;
}

/** Sees each string value the copy keeps and each certified container it keeps as is, at `path` (reused: copy it to keep it). Must not throw. */
export type SnapshotVisit = (value: JsonValue, path: readonly (string | number)[]) => void;

/** What a certified copy holds: the totals its own walk counted, so a later walk can add them at once. */
interface Certificate {
  readonly nodes: number;
  readonly bytes: number;
  readonly depth: number;
  readonly longest: number;
}

/**
 * Containers `snapshot` itself made, with what they hold. Only `snapshot` adds to it, after a walk
 * that checked every rule, and every such container is deeply frozen, so nothing outside can forge
 * or change an entry: a certified value is already what a walk would produce. Walking it again only
 * re-counts the limits, which its certificate answers without touching its contents.
 */
const certified = new WeakMap<object, Certificate>();

/**
 * Turns untrusted input into a detached, deeply frozen plain-JSON copy, or throws a
 * `SnapshotError` naming the path and the rule. Each property descriptor is read exactly once and
 * only its data value is used, so a getter, setter or proxy cannot show one value to the check and
 * another to the copy. Object properties whose value is `undefined` are omitted, as JSON does;
 * `-0` becomes `0`. Nothing is half-applied: the caller either gets the whole copy or an error.
 * A value (or a part of one) that an earlier `snapshot` produced is already plain, frozen data: it is
 * kept as is when it fits this call's limits, and walked like any input when it does not.
 */
export function snapshot(value: unknown, limits?: SnapshotLimits): JsonValue {
  return take(value, limits, true);
}

/**
 * `snapshot` for a copy nothing will snapshot again (a record a store keeps): the same rules and the
 * same result, without recording a certificate for it. `visit` lets a store check a rule of its own
 * on the same walk instead of walking the copy again. Internal to core.
 */
export function snapshotOnce(
  value: unknown,
  limits?: SnapshotLimits,
  visit?: SnapshotVisit,
): JsonValue {
  return take(value, limits, false, visit);
}

function take(
  value: unknown,
  limits: SnapshotLimits | undefined,
  certify: boolean,
  visit?: SnapshotVisit,
): JsonValue {
  const walk: Walk = {
    limits: resolveLimits(limits),
    nodes: 0,
    bytes: 0,
    deepest: 0,
    longest: 0,
    ancestors: [],
    path: [],
    visit,
  };
  const out = guarded(walk, () => copy(value, 0, walk));
  if (certify && out !== null && typeof out === "object" && !certified.has(out)) {
    certified.set(out, {
      nodes: walk.nodes,
      bytes: walk.bytes,
      depth: walk.deepest,
      longest: walk.longest,
    });
  }
  return out;
}

/**
 * Fills absent (or `undefined`) limits with the defaults and rejects a limit that is not a
 * non-negative safe integer: `NaN` or `Infinity` would otherwise switch a check off.
 */
function resolveLimits(limits: SnapshotLimits | undefined): Required<SnapshotLimits> {
  if (limits === undefined || limits === DEFAULT_SNAPSHOT_LIMITS) return DEFAULT_SNAPSHOT_LIMITS;
  // Frozen limits (module constants) cannot change between calls: resolved once each.
  const cacheable = typeof limits === "object" && limits !== null && Object.isFrozen(limits);
  const known = cacheable ? resolvedLimits.get(limits) : undefined;
  if (known !== undefined) return known;
  const out = { ...DEFAULT_SNAPSHOT_LIMITS };
  for (const key of LIMIT_KEYS) {
    const given: unknown = limits[key];
    if (given === undefined) continue;
    if (typeof given !== "number" || !Number.isSafeInteger(given) || given < 0) {
      throw new ValidationError(
        `limits.${key}`,
        "limit",
        `limits.${key} must be a non-negative safe integer`,
      );
    }
    out[key] = given;
  }
  if (cacheable) resolvedLimits.set(limits, Object.freeze(out));
  return out;
}

const resolvedLimits = new WeakMap<SnapshotLimits, Required<SnapshotLimits>>();

const LIMIT_KEYS = Object.keys(DEFAULT_SNAPSHOT_LIMITS) as readonly (keyof SnapshotLimits)[];

/** `snapshot` for values that must be a JSON object at the root. */
export function snapshotObject(
  value: unknown,
  path = "$",
  limits: SnapshotLimits = {},
): JsonObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new SnapshotError(path, "unsupported_type", "must be a plain object");
  }
  return snapshot(value, limits) as JsonObject;
}

/**
 * Runs a walk step so that nothing but a `SnapshotError` leaves it: a Proxy trap or any other
 * reflective read that throws (where `isProxy` cannot see a Proxy) is a rejection at the path the
 * walk had reached, never a raw `Error` or `TypeError`.
 */
function guarded<T>(walk: Walk, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof SnapshotError) throw error;
    return fail(walk, "unreadable", "the value could not be read as data");
  }
}

/**
 * Whether a value is a Proxy, where the platform can tell (Node's `util.types.isProxy`, reached
 * without importing `node:`); elsewhere always false, and a Proxy is read through its descriptors
 * once each, with a throwing trap still a rejection (`guarded`). A Proxy is rejected before any of
 * its traps runs: none of its values reaches a copy.
 */
const isProxy: (value: object) => boolean = (() => {
  const host = globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } };
  const util = host.process?.getBuiltinModule?.("node:util") as
    | { types?: { isProxy?: (value: unknown) => boolean } }
    | undefined;
  const check = util?.types?.isProxy;
  return typeof check === "function" ? (value: object) => check(value) : () => false;
})();

/**
 * The own fields of one object, under exactly the rules `snapshot` applies to every object it
 * walks (not a Proxy, a plain object, no symbol key, no accessor, no hidden property; `undefined`
 * values omitted), without copying the values themselves: for a record whose fields are checked one
 * by one (a request that carries an `AbortSignal` beside its data). Each descriptor is read once;
 * every rejection is a `SnapshotError` at `path`.
 */
export function dataFields(value: unknown, path: string): Readonly<Record<string, unknown>> {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new SnapshotError(path, "unsupported_type", "must be a plain object");
  const walk: Walk = {
    limits: DEFAULT_SNAPSHOT_LIMITS,
    nodes: 0,
    bytes: 0,
    deepest: 0,
    longest: 0,
    ancestors: [],
    path: [],
  };
  try {
    return guarded(walk, () => {
      if (isProxy(value)) fail(walk, "proxy", "a Proxy is not data");
      plainObject(value, walk);
      const out: Record<string, unknown> = Object.create(null);
      for (const key of Reflect.ownKeys(value)) {
        const field = dataValue(value, key, walk);
        if (field !== undefined) out[key as string] = field;
      }
      return out;
    });
  } catch (error) {
    // Rebased onto the caller's path; the field a rule broke at is not named (it is what was sent).
    throw new SnapshotError(
      path,
      (error as SnapshotError).rule,
      "must be a plain object of data properties",
    );
  }
}

/** The path text of where the walk is (`$.a[0].b`), built only for an error. */
function pathOf(walk: Walk, extra?: string | number): string {
  let text = "$";
  const parts = extra === undefined ? walk.path : [...walk.path, extra];
  for (const part of parts) text += typeof part === "number" ? `[${part}]` : `.${part}`;
  return text;
}

function fail(walk: Walk, rule: SnapshotRule, detail: string, extra?: string | number): never {
  throw new SnapshotError(pathOf(walk, extra), rule, detail);
}

function copy(value: unknown, depth: number, walk: Walk): JsonValue {
  walk.nodes += 1;
  if (walk.nodes > walk.limits.maxNodes)
    fail(walk, "nodes", `more than ${walk.limits.maxNodes} nodes`);
  switch (typeof value) {
    case "string":
      countString(value, walk);
      walk.visit?.(value, walk.path);
      return value;
    case "number":
      if (!Number.isFinite(value)) fail(walk, "non_finite", "numbers must be finite");
      return value === 0 ? 0 : value;
    case "boolean":
      return value;
    case "object":
      if (value === null) return null;
      return copyContainer(value, depth + 1, walk);
    default:
      return fail(walk, "unsupported_type", `a ${typeof value} is not JSON data`);
  }
}

function copyContainer(value: object, depth: number, walk: Walk): JsonValue {
  if (isProxy(value)) fail(walk, "proxy", "a Proxy is not data");
  const held = certified.get(value);
  if (held !== undefined && fits(held, depth, walk)) {
    // Already a checked, frozen copy that fits: count what it holds, keep it as is.
    walk.nodes += held.nodes - 1;
    walk.bytes += held.bytes;
    if (depth - 1 + held.depth > walk.deepest) walk.deepest = depth - 1 + held.depth;
    if (held.longest > walk.longest) walk.longest = held.longest;
    walk.visit?.(value as JsonValue, walk.path);
    return value as JsonValue;
  }
  if (depth > walk.limits.maxDepth)
    fail(walk, "depth", `nesting deeper than ${walk.limits.maxDepth}`);
  if (depth > walk.deepest) walk.deepest = depth;
  if (walk.ancestors.includes(value)) fail(walk, "cycle", "the value contains itself");
  walk.ancestors.push(value);
  const out = Array.isArray(value) ? copyArray(value, depth, walk) : copyObject(value, depth, walk);
  // On a throw the whole walk is abandoned, so the stack only needs unwinding on success.
  walk.ancestors.pop();
  return out;
}

/** Whether a certified copy, placed at `depth`, stays within every limit of this walk. */
function fits(held: Certificate, depth: number, walk: Walk): boolean {
  const { limits } = walk;
  return (
    walk.nodes - 1 + held.nodes <= limits.maxNodes &&
    depth - 1 + held.depth <= limits.maxDepth &&
    held.longest <= limits.maxStringBytes &&
    walk.bytes + held.bytes <= limits.maxTotalBytes
  );
}

function copyArray(value: readonly unknown[], depth: number, walk: Walk): JsonValue {
  if (Object.getPrototypeOf(value) !== Array.prototype)
    fail(walk, "non_plain", "arrays must be plain arrays");
  const keys = Reflect.ownKeys(value);
  const length = value.length;
  if (keys.length !== length + 1) {
    for (const key of keys) {
      if (typeof key === "symbol") fail(walk, "symbol_key", "symbol keys are not JSON");
    }
    const named = keys.find((k) => k !== "length" && !isIndex(k as string, length));
    if (named !== undefined) fail(walk, "array_property", "arrays may not carry named properties");
    fail(walk, "sparse_array", "arrays may not have holes");
  }
  const out: JsonValue[] = new Array(length);
  const path = walk.path;
  for (let i = 0; i < length; i++) {
    const descriptor = Object.getOwnPropertyDescriptor(value, i);
    if (descriptor === undefined) fail(walk, "sparse_array", "arrays may not have holes", i);
    if (!("value" in descriptor)) fail(walk, "accessor", "getters and setters are not data", i);
    path.push(i);
    out[i] = copy(descriptor.value, depth, walk);
    path.pop();
  }
  return Object.freeze(out);
}

function copyObject(value: object, depth: number, walk: Walk): JsonValue {
  plainObject(value, walk);
  const out: Record<string, JsonValue> = {};
  const keys = Reflect.ownKeys(value);
  const path = walk.path;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string | symbol;
    const field = dataValue(value, key, walk);
    if (field === undefined) continue;
    path.push(key as string);
    countString(key as string, walk);
    const item = copy(field, depth, walk);
    path.pop();
    if ((key as string) in Object.prototype) {
      // `__proto__` and every other inherited name is defined, never assigned: no setter runs.
      Object.defineProperty(out, key, {
        value: item,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else {
      out[key as string] = item;
    }
  }
  return Object.freeze(out);
}

/** Only plain objects (or a null prototype) are data. */
function plainObject(value: object, walk: Walk): void {
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null)
    fail(walk, "non_plain", "only plain objects are data (no class instances)");
}

/**
 * The one reading of an object's own field: a string key, an enumerable data property, its
 * descriptor read once; `undefined` (absent, or an `undefined` value) is skipped, as JSON does.
 */
function dataValue(value: object, key: string | symbol, walk: Walk): unknown {
  if (typeof key === "symbol") fail(walk, "symbol_key", "symbol keys are not JSON");
  const descriptor = Object.getOwnPropertyDescriptor(value, key);
  if (descriptor === undefined) return undefined;
  if (!("value" in descriptor)) fail(walk, "accessor", "getters and setters are not data", key);
  if (!descriptor.enumerable)
    fail(walk, "hidden_property", "non-enumerable properties are not data", key);
  return descriptor.value;
}

function isIndex(key: string, length: number): boolean {
  const n = Number(key);
  return Number.isInteger(n) && n >= 0 && n < length && String(n) === key;
}

function countString(text: string, walk: Walk): void {
  const bytes = utf8Length(text);
  if (bytes > walk.limits.maxStringBytes)
    fail(walk, "string_bytes", `a string over ${walk.limits.maxStringBytes} bytes`);
  if (bytes > walk.longest) walk.longest = bytes;
  walk.bytes += bytes;
  if (walk.bytes > walk.limits.maxTotalBytes)
    fail(walk, "total_bytes", `strings total over ${walk.limits.maxTotalBytes} bytes`);
}

/** Stable JSON text of a snapshotted value (keys sorted), for hashing and equality of bindings. */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) {
    let text = "[";
    for (let i = 0; i < value.length; i++) {
      // As `join` does, an item with no JSON text (a hole, undefined) leaves an empty slot.
      const item: string | undefined = canonicalJson(value[i] as JsonValue);
      text += i === 0 ? (item ?? "") : `,${item ?? ""}`;
    }
    return `${text}]`;
  }
  const obj = value as JsonObject;
  const keys = Object.keys(obj).sort();
  let text = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    text += `${i === 0 ? "" : ","}${JSON.stringify(key)}:${canonicalJson(obj[key] as JsonValue)}`;
  }
  return `${text}}`;
}
