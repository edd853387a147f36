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

export interface RunTurnRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  /** The person's message: text, or `{role: "user", blocks, meta?: {event: {id, kind: "input"}}}`. */
  readonly input:
    | string
    | { readonly role: "user"; readonly blocks: readonly Block[]; readonly meta?: MsgMeta };
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly toolProfile?: string;
  /** Execution cancellation (never a socket's close). */
  readonly signal?: AbortSignal;
}

export interface NormalizedRequest {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly idempotencyKey: string;
  readonly blocks: readonly Block[];
  readonly meta?: MsgMeta;
  readonly intent: RoutingIntent;
  readonly trigger?: string;
  readonly toolProfile?: string;
  /** Execution cancellation, as read (once, as a data property) from the request. */
  readonly signal?: AbortSignal;
  /** What the bindings hash covers. */
  readonly bound: JsonObject;
}

const MAX_BLOCKS = 64;
const METADATA_ALLOWANCE = 4096;
const REQUEST_FIELDS = [
  "scope",
  "sessionId",
  "idempotencyKey",
  "input",
  "intent",
  "trigger",
  "toolProfile",
  "signal",
];

/**
 * Validates and snapshots a request synchronously, before any await. Throws `ValidationError` (a
 * `SnapshotError` for a shape that is not data). The request's own fields are read once each through
 * the snapshot's descriptor rules (`dataFields`), so a getter on `input` never runs and a Proxy is
 * refused before any trap; errors name what is expected, never a field or value that was sent.
 */
export function normalizeRequest(
  raw: RunTurnRequest,
  maxInputChars: number,
  profiles: ReadonlySet<string>,
): NormalizedRequest {
  if (raw === null || typeof raw !== "object")
    throw new ValidationError("request", "object", "runTurn needs a request object");
  const fields = dataFields(raw, "request");
  for (const key of Object.keys(fields)) {
    if (!REQUEST_FIELDS.includes(key))
      throw new ValidationError(
        "request",
        "unknown_field",
        `runTurn takes only ${REQUEST_FIELDS.join(", ")}`,
      );
  }
  const scope = normalizeScope(fields.scope);
  const sessionId = validateId("sessionId", fields.sessionId);
  const idempotencyKey = validateId("idempotencyKey", fields.idempotencyKey);
  const signal = signalOf(fields.signal);
  const { signal: _signal, scope: _scope, ...rest } = fields;
  const copy = snapshot(rest, {
    maxTotalBytes: maxInputChars * 3 + METADATA_ALLOWANCE,
    maxStringBytes: maxInputChars * 3 + METADATA_ALLOWANCE,
  }) as JsonObject;
  if (charCount(copy) > maxInputChars + METADATA_ALLOWANCE) {
    throw new ValidationError(
      "request.input",
      "max_input_chars",
      `the request is over ${maxInputChars} characters plus 4 KiB of metadata`,
    );
  }
  const intent = normalizeIntent(copy.intent, "request.intent");
  const { blocks, meta } = normalizeInput(copy.input);
  if (
    copy.trigger !== undefined &&
    (typeof copy.trigger !== "string" || copy.trigger.length < 1 || copy.trigger.length > 64)
  ) {
    throw new ValidationError("request.trigger", "string_1_64", "trigger must be 1-64 characters");
  }
  if (
    copy.toolProfile !== undefined &&
    (typeof copy.toolProfile !== "string" || !profiles.has(copy.toolProfile))
  ) {
    throw new ValidationError(
      "request.toolProfile",
      "unknown_profile",
      "toolProfile names no configured profile",
    );
  }
  const textChars = blocks.reduce((n, b) => n + (b.type === "text" ? b.text.length : 0), 0);
  if (textChars > maxInputChars)
    throw new ValidationError(
      "request.input",
      "max_input_chars",
      `the input is over ${maxInputChars} characters`,
    );
  return {
    scope,
    sessionId,
    idempotencyKey,
    ...(signal ? { signal } : {}),
    blocks,
    ...(meta ? { meta } : {}),
    intent,
    ...(copy.trigger !== undefined ? { trigger: copy.trigger as string } : {}),
    ...(copy.toolProfile !== undefined ? { toolProfile: copy.toolProfile as string } : {}),
    bound: Object.freeze({
      input: copy.input as JsonValue,
      intent: copy.intent as JsonValue,
      trigger: copy.trigger ?? null,
      toolProfile: copy.toolProfile ?? null,
    }),
  };
}

/** An `AbortSignal` (a platform object, not data) or nothing. */
function signalOf(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  let isSignal = false;
  try {
    isSignal = value instanceof AbortSignal;
  } catch {
    // a Proxy whose prototype trap throws is not a signal
  }
  if (!isSignal)
    throw new ValidationError("request.signal", "abort_signal", "signal must be an AbortSignal");
  return value as AbortSignal;
}

function charCount(value: JsonValue): number {
  if (typeof value === "string") return value.length;
  if (value === null || typeof value !== "object") return 0;
  let n = 0;
  if (Array.isArray(value)) for (const v of value) n += charCount(v);
  else for (const [k, v] of Object.entries(value)) n += k.length + charCount(v as JsonValue);
  return n;
}

function normalizeInput(input: JsonValue | undefined): { blocks: Block[]; meta?: MsgMeta } {
  if (typeof input === "string") {
    if (input.length === 0)
      throw new ValidationError("request.input", "non_empty", "the input is empty");
    return { blocks: [{ type: "text", text: input }] };
  }
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new ValidationError("request.input", "message", "input must be text or a user message");
  const msg = input as JsonObject;
  for (const key of Object.keys(msg))
    if (!["role", "blocks", "meta"].includes(key))
      throw new ValidationError(
        "request.input",
        "unknown_field",
        "input takes only role, blocks and meta",
      );
  if (msg.role !== "user")
    throw new ValidationError("request.input.role", "user", "input.role must be user");
  const raw = msg.blocks;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_BLOCKS)
    throw new ValidationError("request.input.blocks", "count_1_64", "input needs 1-64 blocks");
  const blocks = raw.map((b, i) => normalizeBlock(b as JsonValue, `request.input.blocks[${i}]`));
  const meta = normalizeMeta(msg.meta);
  return meta ? { blocks, meta } : { blocks };
}

function normalizeBlock(value: JsonValue, path: string): Block {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new ValidationError(path, "block", `${path} must be a block`);
  const b = value as JsonObject;
  if (b.type === "text") {
    if (Object.keys(b).some((k) => k !== "type" && k !== "text"))
      throw new ValidationError(
        path,
        "unknown_field",
        `${path}: a person's text block has only type and text`,
      );
    if (typeof b.text !== "string" || b.text.length === 0)
      throw new ValidationError(
        `${path}.text`,
        "non_empty",
        `${path}.text must be a non-empty string`,
      );
    return { type: "text", text: b.text };
  }
  if (b.type === "media") {
    if (
      Object.keys(b).some((k) => !["type", "kind", "ref", "contentType", "sizeBytes"].includes(k))
    )
      throw new ValidationError(path, "unknown_field", `${path}: unknown media field`);
    if (b.kind !== "image" && b.kind !== "document")
      throw new ValidationError(`${path}.kind`, "closed", "media kind is image or document");
    if (typeof b.ref !== "string" || b.ref.length < 1 || b.ref.length > 2048)
      throw new ValidationError(
        `${path}.ref`,
        "string_1_2048",
        "media ref must be 1-2048 characters",
      );
    if (typeof b.contentType !== "string" || !/^[a-z]+\/[a-z0-9.+-]+$/i.test(b.contentType))
      throw new ValidationError(
        `${path}.contentType`,
        "mime",
        "media contentType must be a MIME type",
      );
    if (
      b.sizeBytes !== undefined &&
      (!Number.isSafeInteger(b.sizeBytes) ||
        (b.sizeBytes as number) < 0 ||
        (b.sizeBytes as number) > 32 * 1024 * 1024)
    ) {
      throw new ValidationError(`${path}.sizeBytes`, "range", "media sizeBytes must be 0-32 MiB");
    }
    return {
      type: "media",
      kind: b.kind,
      ref: b.ref,
      contentType: b.contentType,
      ...(b.sizeBytes !== undefined ? { sizeBytes: b.sizeBytes as number } : {}),
    };
  }
  throw new ValidationError(`${path}.type`, "closed", "input blocks are text or media");
}

function normalizeMeta(meta: JsonValue | undefined): MsgMeta | undefined {
  if (meta === undefined) return undefined;
  if (meta === null || typeof meta !== "object" || Array.isArray(meta))
    throw new ValidationError("request.input.meta", "object", "meta must be an object");
  const m = meta as JsonObject;
  if (Object.keys(m).some((k) => k !== "event"))
    throw new ValidationError(
      "request.input.meta",
      "unknown_field",
      "input meta carries only event",
    );
  const event = m.event as JsonObject | undefined;
  if (
    !event ||
    typeof event !== "object" ||
    event.kind !== "input" ||
    Object.keys(event).length !== 2
  ) {
    throw new ValidationError(
      "request.input.meta.event",
      "closed",
      'meta.event must be {id, kind: "input"}',
    );
  }
  return { event: { id: validateId("meta.event.id", event.id), kind: "input" } };
}
