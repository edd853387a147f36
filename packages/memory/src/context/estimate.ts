import {
  type Block,
  canonicalJson,
  type JsonValue,
  type Msg,
  utf8Length,
} from "@alma-harness/core";

/**
 * Token estimates for deciding when to trim: deliberately rough (UTF-8 bytes / 4, rounded up),
 * deterministic, never used to price or bill (the provider's usage does that; core's
 * `inputTokenBound` is the worst-case bound reservations use).
 */

/** What a message costs beyond its content (role and framing). */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** What a tool call or result costs beyond its name and payload. */
export const TOOL_OVERHEAD_TOKENS = 10;
/** A media block, whatever its bytes: the request carries a reference or the adapter's encoding. */
export const MEDIA_TOKENS = 256;

/** The estimated tokens of a text: its UTF-8 bytes divided by four, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(utf8Length(text) / 4);
}

function jsonTokens(value: JsonValue): number {
  return typeof value === "string" ? estimateTokens(value) : estimateTokens(canonicalJson(value));
}

function blockTokens(block: Block): number {
  switch (block.type) {
    case "text":
      return estimateTokens(block.text);
    case "media":
      return MEDIA_TOKENS;
    case "tool_call":
      return (
        TOOL_OVERHEAD_TOKENS +
        estimateTokens(block.id) +
        estimateTokens(block.name) +
        jsonTokens(block.input)
      );
    case "tool_result":
      return (
        TOOL_OVERHEAD_TOKENS +
        estimateTokens(block.callId) +
        estimateTokens(block.name) +
        jsonTokens(block.output)
      );
    case "provider_tool_call":
    case "provider_tool_result":
      return TOOL_OVERHEAD_TOKENS + jsonTokens(block.payload);
    case "reasoning":
      return (
        estimateTokens(block.text) +
        estimateTokens(block.signature ?? "") +
        estimateTokens(block.redacted ?? "")
      );
  }
}

/** The estimated tokens of one message: its blocks plus the per-message overhead. */
export function estimateMessageTokens(message: Msg): number {
  let total = MESSAGE_OVERHEAD_TOKENS;
  for (const block of message.blocks) total += blockTokens(block);
  return total;
}

/** The estimated tokens of a list of messages. */
export function estimateMessagesTokens(messages: readonly Msg[]): number {
  let total = 0;
  for (const message of messages) total += estimateMessageTokens(message);
  return total;
}
