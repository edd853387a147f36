import {
  type Block,
  dataFields,
  type JsonObject,
  type JsonValue,
  type MsgMeta,
  normalizeIntent,
  normalizeScope,
  type RoutingIntent,
  type Scope,
  snapshot,
  ValidationError,
  validateId,
} from "@alma-harness/core";
import {
  type DescriptorConfig,
  type ResolvedConfig,
  type RootSettings,
  rootSettings,
} from "./config.js";
import {
  boundedCopy,
  inputContent,
  METADATA_ALLOWANCE,
  signalOf,
  type TurnInputContent,
  turnOptions,
} from "./input.js";
import {
  type ConversationRootDescriptor,
  descriptorOf,
  type NormalizedRoot,
  normalizeRoot,
  rootOf,
  rootBinding,
} from "./root.js";

/** The simple request: the content inline, the root derived from `(scope, sessionId, idempotencyKey)`. */
export interface RunTurnRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  /** The person's message: text, or `{role: "user", blocks, meta?: {event: {id, kind: "input"}}}`. */
  readonly input: TurnInputContent;
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly toolProfile?: string;
  /** Execution cancellation (never a socket's close). */
  readonly signal?: AbortSignal;
}

/** What `loadInput` is given: the root key, and a signal aborted at the turn's deadline or cancellation. */
export interface LoadInputContext {
  readonly rootKey: string;
  readonly signal: AbortSignal;
}

/**
 * The explicit request (seed 002): the root's closed descriptor, and the content loaded lazily,
 * only after admission, the root claim and the pending final-result reservation. A busy or replayed
 * request never calls `loadInput`. The loaded input is text or `{role: "user", blocks}`: it cannot
 * carry `meta.event`.
 */
export interface ExplicitTurnRequest {
  readonly root: ConversationRootDescriptor;
  readonly intent: RoutingIntent;
  readonly loadInput: (context: LoadInputContext) => unknown;
  readonly trigger?: string;
  readonly toolProfile?: string;
  /** Execution cancellation (never a socket's close). */
  readonly signal?: AbortSignal;
}

/** Either form `runTurn` and `streamTurn` take. */
export type TurnRequest = RunTurnRequest | ExplicitTurnRequest;

/** What the request's content is: inline, or loaded after the claim (checked against its revision). */
export type TurnContent =
  | { readonly type: "inline"; readonly blocks: readonly Block[]; readonly meta?: MsgMeta }
  | {
      readonly type: "lazy";
      readonly load: ExplicitTurnRequest["loadInput"];
      /** The bound metadata beside the input, to hash a conversation-v1 root's loaded input. */
      readonly bound: JsonObject;
      /** A conversation-v1 root's inputRevision: the loaded input must hash to it. */
      readonly inputRevision?: string;
    };

/** One normalized turn, whichever form it came in: the engine's one input. */
export interface NormalizedRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly binding: string;
  /** The proposed deadline; the admission takes the earlier of it and now + `runTimeoutMs`. */
  readonly deadlineAt: number;
  readonly maxCalls: number;
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly toolProfile?: string;
  /** Execution cancellation, as read (once, as a data property) from the request. */
  readonly signal?: AbortSignal;
  readonly content: TurnContent;
}

const SIMPLE_FIELDS = [
  "scope",
  "sessionId",
  "idempotencyKey",
  "input",
  "intent",
  "trigger",
  "toolProfile",
  "signal",
];
const EXPLICIT_FIELDS = ["root", "intent", "loadInput", "trigger", "toolProfile", "signal"];

/** The request's own fields, read once (`dataFields`); `names` picks the form's closed list. */
function closedFields(
  raw: unknown,
  names: (fields: Readonly<Record<string, unknown>>) => readonly string[],
): Readonly<Record<string, unknown>> {
  if (raw === null || typeof raw !== "object")
    throw new ValidationError("request", "object", "runTurn needs a request object");
  const fields = dataFields(raw, "request");
  const allowed = names(fields);
  for (const key of Object.keys(fields))
    if (!allowed.includes(key))
      throw new ValidationError(
        "request",
        "unknown_field",
        `runTurn takes only ${allowed.join(", ")}`,
      );
  return fields;
}

/** A simple request, checked and copied, with what its binding covers. */
interface SimpleRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  readonly signal?: AbortSignal;
  readonly blocks: readonly Block[];
  readonly meta?: MsgMeta;
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly toolProfile?: string;
  readonly sensitivity: RoutingIntent["sensitivity"];
  readonly bound: JsonObject;
}

function readSimple(fields: Readonly<Record<string, unknown>>, s: RootSettings): SimpleRequest {
  const scope = normalizeScope(fields.scope);
  const sessionId = validateId("sessionId", fields.sessionId);
  const idempotencyKey = validateId("idempotencyKey", fields.idempotencyKey);
  const signal = signalOf(fields.signal);
  const { signal: _signal, scope: _scope, ...rest } = fields;
  const copy = boundedCopy(rest, s.maxInputChars, "request.input");
  const intent = normalizeIntent(copy.intent, "request.intent");
  const { blocks, meta } = inputContent(copy.input, s.maxInputChars, true);
  return {
    scope,
    sessionId,
    idempotencyKey,
    ...(signal ? { signal } : {}),
    blocks,
    ...(meta ? { meta } : {}),
    intent,
    ...turnOptions(copy, s.profileNames),
    sensitivity: intent.sensitivity,
    bound: Object.freeze({
      input: copy.input as JsonValue,
      intent: copy.intent as JsonValue,
      trigger: copy.trigger ?? null,
      toolProfile: copy.toolProfile ?? null,
    }),
  };
}

/**
 * The simple form is sugar over the explicit one: its descriptor is the one
 * `createConversationDescriptor` makes, its deadline the call's time plus `runTimeoutMs`.
 */
function simpleTurn(fields: Readonly<Record<string, unknown>>, c: ResolvedConfig) {
  const simple = readSimple(fields, c);
  // Made of parts read and checked above, against this runner: nothing in it to check again.
  const root = rootOf(descriptorOf(c, simple, c.clock.now() + c.runTimeoutMs));
  return turnOf(root, c, simple, { type: "inline", blocks: simple.blocks, ...metaOf(simple) });
}

function metaOf(simple: SimpleRequest): { meta?: MsgMeta } {
  return simple.meta ? { meta: simple.meta } : {};
}

function turnOf(
  root: NormalizedRoot,
  c: ResolvedConfig,
  meta: {
    readonly intent: RoutingIntent;
    readonly trigger?: string;
    readonly toolProfile?: string;
    readonly signal?: AbortSignal;
  },
  content: TurnContent,
): NormalizedRequest {
  const d = root.descriptor;
  return {
    scope: d.scope,
    sessionId: d.sessionId,
    rootKey: root.rootKey,
    binding: rootBinding(root, c, { ...meta, intent: meta.intent as unknown as JsonValue }),
    deadlineAt: d.deadlineAt,
    maxCalls: d.maxCalls,
    intent: meta.intent,
    ...(meta.trigger !== undefined ? { trigger: meta.trigger } : {}),
    ...(meta.toolProfile !== undefined ? { toolProfile: meta.toolProfile } : {}),
    ...(meta.signal ? { signal: meta.signal } : {}),
    content,
  };
}

/**
 * The explicit form: the descriptor checked against the runner, the metadata copied. Seed 002: "the
 * declared root sensitivity must equal the intent".
 */
function explicitTurn(fields: Readonly<Record<string, unknown>>, c: ResolvedConfig) {
  const signal = signalOf(fields.signal);
  if (typeof fields.loadInput !== "function")
    throw new ValidationError("request.loadInput", "function", "loadInput must be a function");
  const root = normalizeRoot(fields.root, c);
  const { root: _root, loadInput: _load, signal: _signal, ...rest } = fields;
  const copy = snapshot(rest, { maxTotalBytes: METADATA_ALLOWANCE }) as JsonObject;
  const intent = normalizeIntent(copy.intent, "request.intent");
  if (root.descriptor.sensitivity !== intent.sensitivity)
    throw new ValidationError(
      "request.root.sensitivity",
      "intent_sensitivity",
      "the root's sensitivity must equal intent.sensitivity",
    );
  const options = turnOptions(copy, c.profileNames);
  const bound = Object.freeze({
    intent: copy.intent as JsonValue,
    trigger: options.trigger ?? null,
    toolProfile: options.toolProfile ?? null,
  });
  const load = fields.loadInput as ExplicitTurnRequest["loadInput"];
  return turnOf(
    root,
    c,
    { intent, ...options, ...(signal ? { signal } : {}) },
    {
      type: "lazy",
      load,
      bound,
      ...(root.conversationV1 ? { inputRevision: root.descriptor.inputRevision } : {}),
    },
  );
}

/**
 * Validates and snapshots a request of either form synchronously, before any await. Throws
 * `ValidationError` (a `SnapshotError` for a shape that is not data). The request's own fields are
 * read once each through the snapshot's descriptor rules (`dataFields`), so a getter never runs and
 * a Proxy is refused before any trap; errors name what is expected, never a field or value that
 * was sent. A request with a `root` field is the explicit form.
 */
export function normalizeRequest(raw: TurnRequest, config: ResolvedConfig): NormalizedRequest {
  const fields = closedFields(raw, (f) => (f.root !== undefined ? EXPLICIT_FIELDS : SIMPLE_FIELDS));
  if (fields.root !== undefined) return explicitTurn(fields, config);
  return simpleTurn(fields, config);
}

/**
 * The descriptor of a simple request's root (seed 002: "a pure helper for explicit hosts
 * interoperating with simple requests"): the same root key and binding as the simple request, so
 * either replays the other. Its input cannot carry `meta.event` (a lazy input cannot). Throws
 * `ValidationError` for a request `runTurn` would refuse, `ConversationConfigError` for a bad
 * configuration.
 */
export function createConversationDescriptor(
  config: DescriptorConfig,
  input: RunTurnRequest,
  deadlineAt: number,
): ConversationRootDescriptor {
  const settings = rootSettings(config);
  const simple = readSimple(
    closedFields(input, () => SIMPLE_FIELDS),
    settings,
  );
  if (simple.meta?.event)
    throw new ValidationError(
      "request.input.meta",
      "explicit_event",
      "an explicit root's lazy input cannot carry meta.event",
    );
  return descriptorOf(settings, simple, deadlineAt);
}
