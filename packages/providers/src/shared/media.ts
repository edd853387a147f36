import type { MediaBlock } from "@alma-harness/core";

/** Where a media block's bytes come from, as the wire needs it. */
export type MediaSource =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "base64"; readonly mediaType: string; readonly data: string };

const DATA_URL = /^data:([^;,]*)((?:;[^;,=]+(?:=[^;,]*)?)*);base64,([A-Za-z0-9+/=\s]*)$/;

/**
 * A media block travels by reference (seed 001): bytes the loop resolved arrive on the block's
 * request-only `data` (or as a base64 `data:` URL); anything else must be an `http(s)` URL the
 * provider fetches. Other references (a host id) cannot leave, so they are `undefined` and `validate` refuses them.
 */
export function mediaSource(block: MediaBlock): MediaSource | undefined {
  if (typeof block.data === "string")
    return { kind: "base64", mediaType: block.contentType, data: block.data };
  const ref = block.ref;
  if (ref.startsWith("data:")) {
    const match = DATA_URL.exec(ref);
    if (!match) return undefined;
    const declared = match[1] ? match[1].toLowerCase() : "";
    return {
      kind: "base64",
      mediaType: block.contentType || declared,
      data: (match[3] ?? "").replace(/\s+/g, ""),
    };
  }
  if (/^https?:\/\//i.test(ref)) return { kind: "url", url: ref };
  return undefined;
}

export function dataUrl(source: { mediaType: string; data: string }): string {
  return `data:${source.mediaType};base64,${source.data}`;
}

export const IMAGE_TYPES: ReadonlySet<string> = new Set([
  "image/jpeg",
  "image/png",
  "image/gif",
  "image/webp",
]);

/** A file name for providers that require one on inline documents. */
export function fileNameFor(contentType: string, index: number): string {
  const ext =
    contentType === "application/pdf" ? "pdf" : contentType === "text/plain" ? "txt" : "bin";
  return `document-${index + 1}.${ext}`;
}
