import type { MediaBlock } from "./messages.js";
import type { Scope } from "./scope.js";

/** What the product's media source is told about the block it resolves; never more. */
export interface MediaSourceContext {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly kind: MediaBlock["kind"];
  readonly contentType: string;
}

/** The product's bytes for one ref; `contentType` overrides the block's when given. */
export interface MediaBytes {
  readonly bytes: Uint8Array;
  readonly contentType?: string;
}

/**
 * The product's media source (seed 001: "with a MediaSource configured the loop asks the product
 * for the bytes"): asked once per ref and turn, it answers the bytes the loop sends to the provider
 * as base64; the session keeps the ref alone. The harness itself never fetches a reference. It is
 * configured as the loop's `media.source`.
 */
export type MediaSource = (ref: string, ctx: MediaSourceContext) => Promise<MediaBytes>;
