import {
  type Block,
  type MediaBlock,
  type MediaBytes,
  type MediaSource,
  type MediaSourceContext,
  type Msg,
  type Scope,
  trailJoin,
  trailKind,
  ValidationError,
} from "@alma-harness/core";
import type { Recorder } from "./recorder.js";
import { kindOrUnknown } from "./trail.js";
import { EngineConfigError, UncertainTurnError } from "./errors.js";

/** The hard ceiling and the default of `media.maxBytes`: 32 MiB. */
export const MAX_MEDIA_BYTES = 32 * 1024 * 1024;

/** Core's, re-exported: the loop's public media names stay where they were. */
export type { MediaBytes, MediaSource, MediaSourceContext };

/**
 * Media by bytes (spec: media-by-bytes). With it configured, the bytes an input block carries, or
 * `source` asked once per ref and turn, go to the provider as base64; the session keeps the ref.
 * History media on later turns is a placeholder text block (`replay: "placeholder"`, the default)
 * or the bytes again (`replay: "bytes"`, asked from `source`). `maxBytes` (default and at most
 * 32 MiB) refuses a turn whose media is larger before any call.
 */
export interface MediaConfig {
  readonly source?: MediaSource;
  readonly replay?: "placeholder" | "bytes";
  readonly maxBytes?: number;
}

export interface CompiledMedia {
  readonly source: MediaSource | undefined;
  readonly replay: "placeholder" | "bytes";
  readonly maxBytes: number;
}

/** One ref's bytes for this turn's requests: base64, the normalized type and the decoded size. */
export interface ResolvedMedia {
  readonly data: string;
  readonly contentType: string;
  readonly size: number;
}

export function compileMedia(config: MediaConfig | undefined): CompiledMedia | undefined {
  if (config === undefined) return undefined;
  if (config === null || typeof config !== "object")
    throw new EngineConfigError("media must be an object");
  for (const key of Object.keys(config))
    if (!["source", "replay", "maxBytes"].includes(key))
      throw new EngineConfigError(`media.${key} is not a media option`);
  if (config.source !== undefined && typeof config.source !== "function")
    throw new EngineConfigError("media.source must be a function");
  const replay = config.replay ?? "placeholder";
  if (replay !== "placeholder" && replay !== "bytes")
    throw new EngineConfigError('media.replay must be "placeholder" or "bytes"');
  if (replay === "bytes" && config.source === undefined)
    throw new EngineConfigError(
      'media.replay "bytes" needs media.source to ask for the bytes again',
    );
  const maxBytes = config.maxBytes ?? MAX_MEDIA_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1 || maxBytes > MAX_MEDIA_BYTES)
    throw new EngineConfigError(`media.maxBytes must be an integer from 1 to ${MAX_MEDIA_BYTES}`);
  return Object.freeze({ source: config.source, replay, maxBytes });
}

/** A block carries content when it holds bytes: the request-only `data`, or a `data:` URL as its ref. */
export function carriesContent(block: unknown): boolean {
  if (block === null || typeof block !== "object" || (block as { type?: unknown }).type !== "media")
    return false;
  const b = block as { data?: unknown; ref?: unknown };
  return b.data !== undefined || (typeof b.ref === "string" && /^data:/i.test(b.ref));
}

/**
 * Takes inline bytes out of the raw input so the input's snapshot limits do not apply to them:
 * without media a block carrying content is refused; with media a `data:` ref is refused (the
 * session would keep the bytes) and `data` must be base64 text. Returns the blocks without `data`
 * and the data by index, to put back on the frozen copies.
 */
export function detachInlineBytes(
  media: CompiledMedia | undefined,
  raw: unknown,
): { readonly blocks: unknown; readonly data: ReadonlyMap<number, string> } {
  const data = new Map<number, string>();
  if (!Array.isArray(raw)) return { blocks: raw, data };
  const blocks = raw.map((block: unknown, i) => {
    if (!carriesContent(block)) return block;
    if (!media)
      throw new ValidationError(
        `input[${i}]`,
        "media_not_configured",
        `input[${i}] carries media content, which needs the engine's media option`,
      );
    const { data: bytes, ...rest } = block as { data?: unknown; ref: unknown };
    if (typeof rest.ref === "string" && /^data:/i.test(rest.ref))
      throw new ValidationError(
        `input[${i}].ref`,
        "reference",
        `input[${i}].ref must be a reference, not inline content`,
      );
    if (
      typeof bytes !== "string" ||
      !/^[A-Za-z0-9+/]*={0,2}$/.test(bytes) ||
      bytes.length % 4 !== 0
    ) {
      throw new ValidationError(
        `input[${i}].data`,
        "base64",
        `input[${i}].data must be base64 text`,
      );
    }
    data.set(i, bytes);
    return rest;
  });
  return { blocks, data };
}

/** Lower case, parameters stripped: `Image/PNG; charset=x` → `image/png`. */
export function normalizeContentType(type: string): string {
  return (type.split(";")[0] ?? "").trim().toLowerCase();
}

function base64Size(data: string): number {
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return (data.length / 4) * 3 - pad;
}

function mediaBlocks(messages: readonly Msg[]): MediaBlock[] {
  const out: MediaBlock[] = [];
  for (const m of messages)
    if (m.role === "user") for (const b of m.blocks) if (b.type === "media") out.push(b);
  return out;
}

/**
 * Resolves this turn's media before anything is recorded or dispatched: the input's inline bytes,
 * then `source` once per ref (the input's refs, and with `replay: "bytes"` the history's). Over
 * `maxBytes`, a source failure or a malformed answer leaves the turn uncertain with cause `media`.
 */
export async function resolveMedia(
  media: CompiledMedia | undefined,
  rec: Recorder,
  turn: { readonly scope: Scope; readonly sessionId: string; readonly input: readonly Block[] },
  history: readonly Msg[],
): Promise<Map<string, ResolvedMedia>> {
  const resolved = new Map<string, ResolvedMedia>();
  if (!media) return resolved;
  const check = (size: number) => {
    if (size > media.maxBytes)
      throw new UncertainTurnError(
        "media",
        `a media block is ${size} bytes, over the ${media.maxBytes}-byte limit`,
      );
  };
  const wanted: MediaBlock[] = [];
  for (const block of turn.input) {
    if (block.type !== "media") continue;
    if (typeof block.data === "string") {
      const size = base64Size(block.data);
      check(size);
      resolved.set(block.ref, {
        data: block.data,
        contentType: normalizeContentType(block.contentType),
        size,
      });
    } else wanted.push(block);
  }
  if (!media.source) return resolved;
  if (media.replay === "bytes") wanted.push(...mediaBlocks(history));
  // The source is host code: what is pending becomes durable before it runs.
  if (wanted.some((block) => !resolved.has(block.ref))) await rec.commit();
  for (const block of wanted) {
    if (resolved.has(block.ref)) continue;
    const ctx = Object.freeze({
      scope: turn.scope,
      sessionId: turn.sessionId,
      kind: block.kind,
      contentType: block.contentType,
    });
    let answer: MediaBytes;
    try {
      answer = await media.source(block.ref, ctx);
    } catch (error) {
      throw new UncertainTurnError("media", "the media source failed", error);
    }
    if (answer === null || typeof answer !== "object" || !(answer.bytes instanceof Uint8Array))
      throw new UncertainTurnError("media", "the media source must return { bytes: Uint8Array }");
    if (answer.contentType !== undefined && typeof answer.contentType !== "string")
      throw new UncertainTurnError("media", "the media source's contentType must be a string");
    check(answer.bytes.byteLength);
    const contentType = normalizeContentType(answer.contentType ?? block.contentType);
    const data = Buffer.from(
      answer.bytes.buffer,
      answer.bytes.byteOffset,
      answer.bytes.byteLength,
    ).toString("base64");
    resolved.set(block.ref, { data, contentType, size: answer.bytes.byteLength });
  }
  return resolved;
}

/** The input as the session records it: media blocks keep the ref (with the resolved type and size), never the bytes. */
export function storedInput(
  blocks: readonly Block[],
  resolved: ReadonlyMap<string, ResolvedMedia>,
): Block[] {
  return blocks.map((block) => {
    if (block.type !== "media") return block;
    const { data: _bytes, ...rest } = block;
    const known = resolved.get(block.ref);
    return known ? { ...rest, contentType: known.contentType, sizeBytes: known.size } : rest;
  });
}

/** Each media block of the input is egress to the main provider: on the access trail by kind and size, never URI. */
export async function mediaEgress(
  rec: Recorder,
  provider: string,
  blocks: readonly Block[],
  resolved: ReadonlyMap<string, ResolvedMedia>,
): Promise<void> {
  for (const block of blocks) {
    if (block.type !== "media") continue;
    const bytes = resolved.get(block.ref)?.size ?? block.sizeBytes;
    const size =
      typeof bytes === "number" && Number.isSafeInteger(bytes) && bytes >= 0
        ? trailJoin(trailKind("bytes"), bytes)
        : trailKind("unknown_size");
    await rec.record("access", {
      tool: trailKind("media"),
      resource: trailJoin(
        trailKind("provider"),
        rec.trail.idOrHash(provider),
        kindOrUnknown(block.kind),
        size,
      ),
      action: "egress",
    });
  }
}

/** With replay "bytes", history media that goes again is egress again (kind and size, never URI). */
export function replayedHistory(
  media: CompiledMedia | undefined,
  history: readonly Msg[],
): MediaBlock[] {
  return media?.replay === "bytes" ? mediaBlocks(history) : [];
}

/**
 * The request's view of the messages, never recorded: the turn's own media carries its resolved
 * bytes; with media configured, history media is a placeholder text block, or with replay "bytes"
 * the bytes again.
 */
export function requestMessages(
  media: CompiledMedia | undefined,
  history: readonly Msg[],
  own: readonly Msg[],
  resolved: ReadonlyMap<string, ResolvedMedia>,
): readonly Msg[] {
  if (!media) return [...history, ...own];
  const withBytes = (block: MediaBlock): MediaBlock => {
    const known = resolved.get(block.ref);
    return known ? { ...block, contentType: known.contentType, data: known.data } : block;
  };
  const past = history.map((m) => {
    if (m.role !== "user" || !m.blocks.some((b) => b.type === "media")) return m;
    const blocks = m.blocks.map((b): Block => {
      if (b.type !== "media") return b;
      if (media.replay === "bytes") return withBytes(b);
      const size = typeof b.sizeBytes === "number" ? `${b.sizeBytes} bytes` : "unknown size";
      return {
        type: "text",
        text: `[${b.kind}: ${b.contentType}, ${size}, sent earlier]`,
        origin: "harness",
      };
    });
    return { ...m, blocks };
  });
  const current = own.map((m) =>
    m.role === "user" && m.blocks.some((b) => b.type === "media")
      ? { ...m, blocks: m.blocks.map((b) => (b.type === "media" ? withBytes(b) : b)) }
      : m,
  );
  return [...past, ...current];
}
