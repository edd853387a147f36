import {
  type Block,
  type JsonObject,
  type JsonValue,
  type MsgMeta,
  snapshot,
  ValidationError,
  validateId,
} from "@alma-harness/core";

/**
 * The content rules of a turn's input, one owner for the simple request's inline input and an
 * explicit root's loaded input: text or a user message of 1-64 text/media blocks, at most
 * `maxInputChars` characters of text and `maxInputChars` + 4 KiB of characters in the request.
 */

/** The person's message: text, or `{role: "user", blocks, meta?: {event: {id, kind: "input"}}}`. */
export type TurnInputContent =
  | string
  | { readonly role: "user"; readonly blocks: readonly Block[]; readonly meta?: MsgMeta };

const MAX_BLOCKS = 64;
/** Characters of request metadata allowed beside `maxInputChars` of input. */
export const METADATA_ALLOWANCE = 4096;

/**
 * The bounded plain-JSON copy of request data (`snapshot`: no accessor runs, a Proxy is refused,
 * 64 levels, 100k nodes) within `maxInputChars` + 4 KiB characters.
 */
export function boundedCopy(
  value: Readonly<Record<string, unknown>>,
  maxInputChars: number,
  path: string,
): JsonObject {
  const copy = snapshot(value, {
    maxTotalBytes: maxInputChars * 3 + METADATA_ALLOWANCE,
    maxStringBytes: maxInputChars * 3 + METADATA_ALLOWANCE,
  }) as JsonObject;
  if (charCount(copy) > maxInputChars + METADATA_ALLOWANCE) {
    throw new ValidationError(
      path,
      "max_input_chars",
      `the request is over ${maxInputChars} characters plus 4 KiB of metadata`,
    );
  }
  return copy;
}

/**
 * A copied input's blocks (and `meta.event`, where `withMeta`), its text within `maxInputChars`.
 * An explicit root's lazy input cannot carry `meta.event` (seed 002): `withMeta` is false for it.
 */
export function inputContent(
  input: JsonValue | undefined,
  maxInputChars: number,
  withMeta: boolean,
): { blocks: Block[]; meta?: MsgMeta } {
  const content = normalizeInput(input, withMeta);
  const textChars = content.blocks.reduce((n, b) => n + (b.type === "text" ? b.text.length : 0), 0);
  if (textChars > maxInputChars)
    throw new ValidationError(
      "request.input",
      "max_input_chars",
      `the input is over ${maxInputChars} characters`,
    );
  return content;
}

/** `trigger` and `toolProfile` of a copied request: 1-64 characters; a configured profile. */
export function turnOptions(
  copy: JsonObject,
  profiles: ReadonlySet<string>,
): { trigger?: string; toolProfile?: string } {
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
  return {
    ...(copy.trigger !== undefined ? { trigger: copy.trigger as string } : {}),
    ...(copy.toolProfile !== undefined ? { toolProfile: copy.toolProfile as string } : {}),
  };
}

/** An `AbortSignal` (a platform object, not data) or nothing. */
export function signalOf(value: unknown): AbortSignal | undefined {
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

function normalizeInput(
  input: JsonValue | undefined,
  withMeta: boolean,
): { blocks: Block[]; meta?: MsgMeta } {
  if (typeof input === "string") {
    if (input.length === 0)
      throw new ValidationError("request.input", "non_empty", "the input is empty");
    return { blocks: [{ type: "text", text: input }] };
  }
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new ValidationError("request.input", "message", "input must be text or a user message");
  const msg = input as JsonObject;
  const fields = withMeta ? ["role", "blocks", "meta"] : ["role", "blocks"];
  for (const key of Object.keys(msg))
    if (!fields.includes(key))
      throw new ValidationError(
        "request.input",
        "unknown_field",
        `input takes only ${fields.join(", ")}`,
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
