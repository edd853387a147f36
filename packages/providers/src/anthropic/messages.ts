import {
  type Block,
  type JsonObject,
  type JsonValue,
  type MediaBlock,
  type Msg,
  type ReasoningBlock,
  SEARCH_TOOLS_NAME,
  type ToolResultBlock,
} from "@alma-harness/core";
import { mediaSource } from "../shared/media.js";
import { renderText, renderToolOutput } from "../shared/text.js";
import type {
  ContentParam,
  MessageParam,
  Source,
  ToolResultContent,
  VerbatimBlock,
} from "./wire.js";

export const ANTHROPIC_PROVIDER = "anthropic";

/**
 * Neutral messages → Anthropic messages, one for one and in order (consecutive same-role messages
 * are sent as the log has them; the provider merges them). Blocks another provider or model
 * produced (reasoning not stamped `anthropic` and `model`, foreign provider tool blocks) are left
 * out; a message left with no content is dropped, since the API refuses empty content. With
 * `deferred` (native loading), a `search_tools` result's loads of those tools follow its text as
 * `tool_reference` blocks.
 */
export function toAnthropicMessages(
  messages: readonly Msg[],
  model: string,
  harness?: WeakSet<object>,
  deferred?: ReadonlySet<string>,
): MessageParam[] {
  const out: MessageParam[] = [];
  for (const msg of messages) {
    const content: ContentParam[] = [];
    for (const block of msg.blocks) {
      const param =
        block.type === "tool_result" ? toToolResult(block, deferred) : toContent(block, model);
      if (!param) continue;
      content.push(param);
      // A harness notice or volatile suffix is carried by one request only: never a cache breakpoint.
      if (block.type === "text" && block.origin === "harness") harness?.add(param);
    }
    if (content.length > 0) out.push({ role: msg.role, content });
  }
  trimFinalAssistant(out);
  return out;
}

/**
 * The API refuses a final assistant turn whose text ends in whitespace (a prefill, a `pause_turn`
 * continuation): its last text block is right-trimmed, and dropped (with the message, if nothing
 * is left) when only whitespace was there.
 */
function trimFinalAssistant(out: MessageParam[]): void {
  const last = out.at(-1);
  if (last?.role !== "assistant") return;
  const content = last.content as ContentParam[];
  const at = content.length - 1;
  const block = content[at] as { type: string; text?: unknown } | undefined;
  if (block?.type !== "text" || typeof block.text !== "string") return;
  const text = block.text.trimEnd();
  if (text.length > 0) content[at] = { ...(block as ContentParam), text } as ContentParam;
  else content.splice(at, 1);
  if (content.length === 0) out.pop();
}

function toContent(block: Block, model: string): ContentParam | undefined {
  switch (block.type) {
    case "text": {
      // The API refuses a text block with only whitespace ("text content blocks must contain non-whitespace text").
      const text = renderText(block);
      return text.trim().length > 0 ? { type: "text", text } : undefined;
    }
    case "media":
      return toMedia(block);
    case "tool_call":
      return { type: "tool_use", id: block.id, name: block.name, input: block.input };
    case "tool_result":
      return {
        type: "tool_result",
        tool_use_id: block.callId,
        content: renderToolOutput(block.output),
        is_error: block.isError,
      };
    case "reasoning":
      return toThinking(block, model);
    case "provider_tool_call":
    case "provider_tool_result":
      return block.provider === ANTHROPIC_PROVIDER ? verbatim(block.payload) : undefined;
  }
}

/**
 * A tool result. Loading natively, a `search_tools` result's loads that the request defers are
 * sent as `tool_reference` blocks after the result's text, so the API expands those definitions in
 * the conversation (tool-search-tool, "Custom tool search implementation"; the SDK's
 * `ToolResultBlockParam.content` allows text and references together). A load of a tool the
 * request does not defer (no longer granted) has no reference: the API refuses a reference
 * without a definition ("Tool reference '…' not found in available tools").
 */
function toToolResult(
  block: ToolResultBlock,
  deferred: ReadonlySet<string> | undefined,
): ContentParam {
  const text = renderToolOutput(block.output);
  const loads =
    deferred && block.name === SEARCH_TOOLS_NAME && Array.isArray(block.loads)
      ? block.loads.filter((n) => deferred.has(n))
      : [];
  if (loads.length === 0)
    return {
      type: "tool_result",
      tool_use_id: block.callId,
      content: text,
      is_error: block.isError,
    };
  const content: ToolResultContent[] = [
    { type: "text", text },
    ...loads.map((name): ToolResultContent => ({ type: "tool_reference", tool_name: name })),
  ];
  return { type: "tool_result", tool_use_id: block.callId, content, is_error: block.isError };
}

function toMedia(block: MediaBlock): ContentParam | undefined {
  const source = mediaSource(block);
  if (!source) return undefined;
  let wire: Source;
  if (source.kind === "url") wire = { type: "url", url: source.url };
  else if (block.kind === "document" && block.contentType === "text/plain") {
    wire = {
      type: "text",
      media_type: "text/plain",
      data: Buffer.from(source.data, "base64").toString("utf8"),
    };
  } else wire = { type: "base64", media_type: block.contentType, data: source.data };
  return block.kind === "image"
    ? { type: "image", source: wire }
    : { type: "document", source: wire };
}

/**
 * Thinking is replayed verbatim with its signature, redacted thinking with its data. A signature
 * binds a block to the model that wrote it (a foreign block is a non-retryable 400 "Invalid
 * signature in thinking block"), so only blocks stamped with this provider and the request's model
 * are sent; any other reasoning (another provider, another model, no provenance) is left out.
 */
export function toThinking(block: ReasoningBlock, model: string): ContentParam | undefined {
  if (block.provider !== ANTHROPIC_PROVIDER || block.model !== model) return undefined;
  if (block.redacted) return { type: "redacted_thinking", data: block.redacted };
  if (block.signature)
    return { type: "thinking", thinking: block.text, signature: block.signature };
  return undefined;
}

function verbatim(payload: JsonValue): VerbatimBlock | undefined {
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return undefined;
  const block = payload as JsonObject;
  if (typeof block.type !== "string") return undefined;
  return { ...block, type: block.type };
}
