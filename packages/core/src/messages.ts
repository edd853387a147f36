import type { JsonObject, JsonValue } from "./snapshot.js";

/**
 * The neutral message format: every provider adapter translates to and from it, every store keeps
 * it. Blocks are a flat discriminated union on `type` (snake_case values, one casing rule).
 */
export type Role = "user" | "assistant";

/**
 * Who wrote a text block when it was not the person or the model: `harness` (the per-turn volatile
 * suffix or a final-answer notice), `human` (a professional's message the person saw from the
 * product's side), `system` (an automatic notice the person saw). Absent means the person or model.
 */
export type TextOrigin = "harness" | "human" | "system";

export interface TextBlock {
  readonly type: "text";
  readonly text: string;
  readonly origin?: TextOrigin;
  /** For `human`/`system` origins: the label the model reads (for example "Dr. Ruiz"). */
  readonly label?: string;
}

/** Media travels by reference; the session never holds inline bytes. */
export interface MediaBlock {
  readonly type: "media";
  readonly kind: "image" | "document";
  /** The product's reference (a URL the provider may fetch, or an id the host's media source resolves). */
  readonly ref: string;
  readonly contentType: string;
  readonly sizeBytes?: number;
  /**
   * Request-only (spec: media-by-bytes): the base64 bytes the loop resolved for one request. Never
   * persisted: the session keeps the ref alone. A turn's input carrying it needs engine media.
   */
  readonly data?: string;
}

export interface ToolCallBlock {
  readonly type: "tool_call";
  readonly id: string;
  readonly name: string;
  readonly input: JsonObject;
}

export interface ToolResultBlock {
  readonly type: "tool_result";
  readonly callId: string;
  readonly name: string;
  /** The observation the model reads: text, or JSON data rendered by the adapter. */
  readonly output: JsonValue;
  readonly isError: boolean;
  /** Stable machine code for harness-made error observations (TOOL_NOT_FOUND, TOOL_BAD_INPUT, …). */
  readonly code?: string;
  /** Deferred tools a `search_tools` result loaded, by full name. */
  readonly loads?: readonly string[];
}

/** A provider-executed tool call (today `web_search`); the payload is opaque and replayed verbatim. */
export interface ProviderToolCallBlock {
  readonly type: "provider_tool_call";
  readonly provider: string;
  readonly id: string;
  readonly name: string;
  readonly payload: JsonValue;
}

export interface ProviderToolResultBlock {
  readonly type: "provider_tool_result";
  readonly provider: string;
  readonly callId: string;
  readonly name: string;
  /** Number of results the provider returned, for the access trail; never the query. */
  readonly resultCount: number;
  readonly payload: JsonValue;
}

/** The model's reasoning: persisted and replayed to the provider, never in a reply or a stream. */
export interface ReasoningBlock {
  readonly type: "reasoning";
  readonly text: string;
  /** Provider signature for verbatim replay (Anthropic thinking). */
  readonly signature?: string;
  /** Opaque redacted reasoning (Anthropic redacted_thinking, OpenAI encrypted content). */
  readonly redacted?: string;
  /**
   * Provenance, stamped by the call that streamed the block: the client's provider and the
   * request's model. An adapter replays only reasoning its own provider produced (Anthropic and
   * OpenRouter: the same model too); a block without provenance is treated as foreign and dropped.
   */
  readonly provider?: string;
  readonly model?: string;
}

export type Block =
  | TextBlock
  | MediaBlock
  | ToolCallBlock
  | ToolResultBlock
  | ProviderToolCallBlock
  | ProviderToolResultBlock
  | ReasoningBlock;

export type BlockType = Block["type"];

/** A host fact recorded in the log: the person's input, a message they saw, or an undelivered reply. */
export interface MsgEvent {
  readonly id: string;
  readonly kind: "input" | "message" | "undelivered";
}

export interface MsgMeta {
  /** The id of the turn that recorded this message. */
  readonly turn?: string;
  readonly event?: MsgEvent;
  /** Present on a rotation summary: the view of later steps starts here. */
  readonly rotation?: { readonly replaces: number };
  /** When the turn recorded this message (epoch ms, the engine's clock); the cold-start rule reads the newest. */
  readonly at?: number;
}

export interface Msg {
  readonly role: Role;
  readonly blocks: readonly Block[];
  readonly meta?: MsgMeta;
}

export function textOf(blocks: readonly Block[]): string {
  let out = "";
  for (const block of blocks) if (block.type === "text") out += block.text;
  return out;
}

/** The blocks a reply may show: everything but reasoning. */
export function replyBlocks(blocks: readonly Block[]): readonly Block[] {
  return blocks.filter((b) => b.type !== "reasoning");
}
