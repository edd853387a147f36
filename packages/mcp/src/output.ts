import { type JsonValue, snapshot } from "@alma-harness/core";

/** At most this many content parts reach the model; the rest are counted, not shown. */
export const MAX_PARTS = 64;

type Part = Record<string, unknown>;

/** A text cut to `max` characters with a marker saying how much was cut. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[cut: ${text.length - max} of ${text.length} characters]`;
}

function size(data: unknown): number {
  return typeof data === "string" ? Math.floor((data.length * 3) / 4) : 0;
}

/**
 * One content part as the model reads it. Text is kept (bounded); binary parts (images, audio,
 * blobs) are described by kind, type and size, never pasted as base64 into the context.
 */
function partOf(part: Part, max: number): JsonValue {
  const mimeType = typeof part.mimeType === "string" ? part.mimeType.slice(0, 100) : null;
  switch (part.type) {
    case "text":
      return { type: "text", text: cut(String(part.text ?? ""), max) };
    case "image":
    case "audio":
      return { type: part.type, mimeType, bytes: size(part.data) };
    case "resource_link":
      return {
        type: "resource_link",
        uri: cut(String(part.uri ?? ""), 2_000),
        name: cut(String(part.name ?? ""), 200),
      };
    case "resource": {
      const r = (part.resource ?? {}) as Part;
      const uri = cut(String(r.uri ?? ""), 2_000);
      const type = typeof r.mimeType === "string" ? r.mimeType.slice(0, 100) : null;
      if (typeof r.text === "string")
        return { type: "resource", uri, mimeType: type, text: cut(r.text, max) };
      return { type: "resource", uri, mimeType: type, bytes: size(r.blob) };
    }
    default:
      return { type: "unknown" };
  }
}

/**
 * A `tools/call` result as the observation the model reads: only text parts → their text joined;
 * otherwise the parts (bounded), with `structuredContent` beside them when the server sent it (as
 * bounded JSON, or its cut text when it is not). Each piece is bounded here so a huge answer cannot
 * blow the snapshot; the loop then bounds the whole to the tool's `maxOutputChars`.
 */
export function observationOf(result: Record<string, unknown>, max: number): JsonValue {
  const content = Array.isArray(result.content) ? (result.content as Part[]) : [];
  const parts = content.slice(0, MAX_PARTS).map((p) => partOf(p ?? {}, max));
  const more = content.length - parts.length;
  const structured = structuredOf(result.structuredContent, max);
  const allText = parts.every((p) => (p as Part).type === "text");
  if (allText && structured === undefined && more === 0)
    return cut(parts.map((p) => (p as { text: string }).text).join("\n"), max);
  return {
    content: parts,
    ...(more > 0 ? { moreParts: more } : {}),
    ...(structured === undefined ? {} : { structuredContent: structured }),
  };
}

function structuredOf(value: unknown, max: number): JsonValue | undefined {
  if (value === undefined || value === null) return undefined;
  try {
    const data = snapshot(value, { maxDepth: 32, maxNodes: 10_000 });
    const text = JSON.stringify(data);
    return text.length <= max ? data : cut(text, max);
  } catch {
    return "[structuredContent is not bounded JSON data]";
  }
}
