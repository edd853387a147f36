import {
  canonicalJson,
  dataFields,
  isSensitivity,
  type JsonObject,
  type JsonValue,
  normalizeScope,
  type Scope,
  type Sensitivity,
  snapshot,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import type { RootSettings } from "./config.js";
import { bindingOf, conversationRootKey } from "./keys.js";

/**
 * The closed request descriptor of a root (seed 002, "runTurn({root,intent,loadInput,...}) requires
 * the root's closed request descriptor"): who the turn is and what it is bound to, without its
 * content. The host makes it once for a request and passes the same one on every delivery; the
 * runner reads it before any I/O and refuses an unknown, missing or mismatched field with a
 * `ValidationError`.
 *
 * Identity is exactly one of:
 * - `idempotencyKey` — a conversation-v1 identity, the simple request's: the root key is
 *   `conversationRootKey(scope, sessionId, idempotencyKey)`, so a simple request and the descriptor
 *   `createConversationDescriptor` makes for it are one root and either replays the other;
 * - `rootId` — an arbitrary explicit root named by the host (never a browser's or a model's id):
 *   the root key and the turn id, verbatim, 1-128 printable ASCII characters. Ids shaped like the runner's own keys (`c1_…`, `sc1_…`, `ev_…`:
 *   lower-case letters and digits before a `_`) are reserved and refused.
 *
 * The runner allocates everything below the root (child slots, call ids, parents): the descriptor
 * has no field for them.
 */
export interface ConversationRootDescriptor {
  /** The descriptor's own shape version: 1. */
  readonly version: 1;
  readonly scope: Scope;
  readonly sessionId: string;
  readonly idempotencyKey?: string;
  readonly rootId?: string;
  /**
   * The host's revision of the complete immutable request: content, intent, trigger, tool profile.
   * For a conversation-v1 identity it is the simple request's binding (`createConversationDescriptor`
   * computes it), and the loaded input is checked against it.
   */
  readonly inputRevision: string;
  /** Must equal the runner's `configRevision`. */
  readonly configRevision: string;
  /** Must equal the runner's `resultContractVersion` (the output version; default 1). */
  readonly resultContractVersion: number;
  /** Must equal the runner's `resultRetentionMs`. */
  readonly resultRetentionMs: number;
  /** Must equal the runner's caps, normalized (`{usdMicros, onExceeded}` per cap). */
  readonly caps: Readonly<
    Record<string, { readonly usdMicros: number; readonly onExceeded: string }>
  >;
  /** At most the runner's `maxCalls`: a root may narrow it, never widen it. */
  readonly maxCalls: number;
  /** The root's declared sensitivity; must equal the request's `intent.sensitivity`. */
  readonly sensitivity: Sensitivity;
  /**
   * The proposed deadline (epoch ms). The turn's deadline is the earlier of it and the admission's
   * time plus `runTimeoutMs`; a deadline already passed at admission is `not_admitted`.
   */
  readonly deadlineAt: number;
}

/** A checked descriptor: its frozen copy and its root key. */
export interface NormalizedRoot {
  readonly descriptor: ConversationRootDescriptor;
  readonly rootKey: string;
  /** A conversation-v1 identity (`idempotencyKey`), bound by the narrow clock-race rule. */
  readonly conversationV1: boolean;
}

const REQUIRED = [
  "version",
  "scope",
  "sessionId",
  "inputRevision",
  "configRevision",
  "resultContractVersion",
  "resultRetentionMs",
  "caps",
  "maxCalls",
  "sensitivity",
  "deadlineAt",
] as const;
const FIELDS: readonly string[] = [...REQUIRED, "idempotencyKey", "rootId"];
/** The shape of the runner's own keys (`c1_`, `sc1_`, `b1_`, `e1_`, `ev_`): never an explicit root id. */
const RESERVED_ID = /^([a-z]+[0-9]+|ev)_/;
/**
 * Characters an explicit root id may take: the runner derives longer ids under it (the journal's
 * `<root>:extraction:<n>:settlement`, a step output's `<root>:step:<n>`), which must stay ids.
 */
export const MAX_ROOT_ID_CHARS = 128;
/** Bytes a descriptor may take (its ids are at most 200 characters each). */
const DESCRIPTOR_BYTES = 4096;

function fail(field: string, rule: string, message: string): never {
  throw new ValidationError(`request.root${field ? `.${field}` : ""}`, rule, message);
}

function id(field: string, value: unknown): string {
  try {
    return validateId(field, value);
  } catch {
    return fail(field, "id", `root.${field} must be 1-200 printable ASCII characters`);
  }
}

/** The descriptor's own shape: closed, plain data, bounded. */
function readDescriptor(raw: unknown): ConversationRootDescriptor {
  if (raw === null || typeof raw !== "object")
    fail("", "object", "root must be a closed request descriptor");
  const fields = dataFields(raw, "request.root");
  for (const key of Object.keys(fields))
    if (!FIELDS.includes(key)) fail("", "unknown_field", `root takes only ${FIELDS.join(", ")}`);
  for (const key of REQUIRED)
    if (fields[key] === undefined) fail(key, "required", `root.${key} is required`);
  if ((fields.idempotencyKey === undefined) === (fields.rootId === undefined))
    fail("", "identity", "root needs exactly one of idempotencyKey and rootId");
  const scope = normalizeScope(fields.scope);
  const { scope: _scope, ...rest } = fields;
  const copy = snapshot(rest, { maxTotalBytes: DESCRIPTOR_BYTES }) as JsonObject;
  if (copy.version !== 1) fail("version", "closed", "root.version must be 1");
  if (fields.rootId !== undefined) {
    const rootId = id("rootId", copy.rootId);
    if (rootId.length > MAX_ROOT_ID_CHARS)
      fail("rootId", "id", `root.rootId must be 1-${MAX_ROOT_ID_CHARS} characters`);
    if (RESERVED_ID.test(rootId))
      fail("rootId", "reserved", "root.rootId must not take the shape of the runner's own keys");
  }
  if (!isSensitivity(copy.sensitivity))
    fail("sensitivity", "closed", "root.sensitivity must be a sensitivity");
  if (!Number.isSafeInteger(copy.deadlineAt) || (copy.deadlineAt as number) < 0)
    fail("deadlineAt", "epoch_ms", "root.deadlineAt must be epoch milliseconds");
  return Object.freeze({
    ...(copy as unknown as ConversationRootDescriptor),
    scope,
    sessionId: id("sessionId", copy.sessionId),
    inputRevision: id("inputRevision", copy.inputRevision),
    ...(copy.idempotencyKey !== undefined
      ? { idempotencyKey: id("idempotencyKey", copy.idempotencyKey) }
      : {}),
  });
}

/**
 * Seed 002: "Its configuration/output versions and retention must match construction, caps must
 * match, maxCalls may narrow".
 */
function matchRunner(d: ConversationRootDescriptor, settings: RootSettings): void {
  if (d.configRevision !== settings.configRevision)
    fail("configRevision", "mismatch", "root.configRevision must equal the runner's");
  if (d.resultContractVersion !== settings.resultContractVersion)
    fail("resultContractVersion", "mismatch", "root.resultContractVersion must equal the runner's");
  if (d.resultRetentionMs !== settings.resultRetentionMs)
    fail("resultRetentionMs", "mismatch", "root.resultRetentionMs must equal the runner's");
  if (canonicalJson(d.caps as unknown as JsonValue) !== canonicalJson(capsJson(settings)))
    fail("caps", "mismatch", "root.caps must equal the runner's caps");
  if (!Number.isSafeInteger(d.maxCalls) || d.maxCalls < 1 || d.maxCalls > settings.maxCalls)
    fail("maxCalls", "narrow", `root.maxCalls must be 1-${settings.maxCalls}`);
}

/** The runner's caps as a descriptor carries them, copied once per runner. */
const capsCopies = new WeakMap<RootSettings, ConversationRootDescriptor["caps"]>();
function capsOf(settings: RootSettings): ConversationRootDescriptor["caps"] {
  let caps = capsCopies.get(settings);
  if (caps === undefined) {
    caps = snapshot(capsJson(settings)) as ConversationRootDescriptor["caps"];
    capsCopies.set(settings, caps);
  }
  return caps;
}

function capsJson(settings: RootSettings): JsonValue {
  return settings.capsNormalized as unknown as JsonValue;
}

/** Checks a descriptor against the runner, synchronously, before any I/O. */
export function normalizeRoot(raw: unknown, settings: RootSettings): NormalizedRoot {
  const descriptor = readDescriptor(raw);
  matchRunner(descriptor, settings);
  return rootOf(descriptor);
}

/**
 * A checked descriptor's root: its key (a conversation-v1 identity's, or the host's own id). The
 * simple form takes it straight from the descriptor `descriptorOf` made of checked parts.
 */
export function rootOf(descriptor: ConversationRootDescriptor): NormalizedRoot {
  const conversationV1 = descriptor.idempotencyKey !== undefined;
  const rootKey = conversationV1
    ? conversationRootKey(
        descriptor.scope,
        descriptor.sessionId,
        descriptor.idempotencyKey as string,
      )
    : (descriptor.rootId as string);
  return { descriptor, rootKey, conversationV1 };
}

/** The simple request's binding (unchanged since the first stored roots): what its inputRevision is. */
export function inputRevisionOf(settings: RootSettings, bound: JsonObject): string {
  return bindingOf({
    bound,
    configRevision: settings.configRevision,
    resultContractVersion: settings.resultContractVersion,
  });
}

/** The descriptor a simple request stands for (`createConversationDescriptor`, and the simple form). */
export function descriptorOf(
  settings: RootSettings,
  request: {
    readonly scope: Scope;
    readonly sessionId: string;
    readonly idempotencyKey: string;
    readonly sensitivity: Sensitivity;
    readonly bound: JsonObject;
  },
  deadlineAt: number,
): ConversationRootDescriptor {
  if (!Number.isSafeInteger(deadlineAt) || deadlineAt < 0)
    fail("deadlineAt", "epoch_ms", "deadlineAt must be epoch milliseconds");
  return Object.freeze({
    version: 1,
    scope: request.scope,
    sessionId: request.sessionId,
    idempotencyKey: request.idempotencyKey,
    inputRevision: inputRevisionOf(settings, request.bound),
    configRevision: settings.configRevision,
    resultContractVersion: settings.resultContractVersion,
    resultRetentionMs: settings.resultRetentionMs,
    caps: capsOf(settings),
    maxCalls: settings.maxCalls,
    sensitivity: request.sensitivity,
    deadlineAt,
  });
}

/**
 * What a retry of the root must match. A conversation-v1 identity follows seed 002's narrow
 * clock-race rule: "differing proposed deadlines reuse the first descriptor only if all other
 * bindings match", so its binding leaves the deadline out and, at the runner's own `maxCalls`, is
 * the inputRevision itself, the simple request's binding ("a trusted-host convention, not proof of
 * hashed content"). "Arbitrary explicit roots keep exact binding semantics": every field of the
 * descriptor, the deadline included, and the request's intent, trigger and profile.
 */
export function rootBinding(
  root: NormalizedRoot,
  settings: RootSettings,
  meta: { readonly intent: JsonValue; readonly trigger?: string; readonly toolProfile?: string },
): string {
  const d = root.descriptor;
  if (root.conversationV1)
    return d.maxCalls === settings.maxCalls
      ? d.inputRevision
      : bindingOf({ conversation: "v1", inputRevision: d.inputRevision, maxCalls: d.maxCalls });
  return bindingOf({
    explicit: "v1",
    root: d as unknown as JsonValue,
    intent: meta.intent,
    trigger: meta.trigger ?? null,
    toolProfile: meta.toolProfile ?? null,
  });
}
