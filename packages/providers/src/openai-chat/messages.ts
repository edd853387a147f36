import type {
  Block,
  JsonValue,
  MediaBlock,
  Msg,
  TextBlock,
  ToolCallBlock,
} from "@alma-harness/core";
import { dataUrl, fileNameFor, mediaSource } from "../shared/media.js";
import { renderText, renderToolOutput } from "../shared/text.js";
import type { ChatContentPart, ChatMessage, ChatToolCallParam } from "./wire.js";

/** Extra fields an adapter adds to a replayed assistant message (OpenRouter `reasoning_details`). */
export type AssistantExtras = (msg: Msg) => Record<string, JsonValue> | undefined;

/**
 * Neutral → Chat Completions messages. System blocks become one `system` message. A user message's
 * tool results become `tool` messages first (they must follow the assistant's calls), then the
 * rest of its blocks one `user` message. An assistant message carries its text and its calls
 * (arguments re-serialized from the stored input). Reasoning and provider tool blocks have no
 * Chat Completions form and are left out unless `extras` carries them.
 */
export function toChatMessages(
  system: readonly TextBlock[],
  messages: readonly Msg[],
  extras?: AssistantExtras,
): ChatMessage[] {
  const out: ChatMessage[] = [];
  const systemText = system
    .map(renderText)
    .filter((t) => t.length > 0)
    .join("\n\n");
  if (systemText) out.push({ role: "system", content: systemText });
  for (const msg of messages) {
    if (msg.role === "user") pushUser(msg.blocks, out);
    else pushAssistant(msg, out, extras);
  }
  return out;
}

function pushUser(blocks: readonly Block[], out: ChatMessage[]): void {
  const parts: ChatContentPart[] = [];
  let documents = 0;
  for (const block of blocks) {
    if (block.type === "tool_result")
      out.push({
        role: "tool",
        tool_call_id: block.callId,
        content: renderToolOutput(block.output),
      });
    else if (block.type === "text") {
      const text = renderText(block);
      if (text) parts.push({ type: "text", text });
    } else if (block.type === "media") {
      const part = mediaPart(block, documents);
      if (part?.type === "file") documents += 1;
      if (part) parts.push(part);
    }
  }
  if (parts.length === 0) return;
  const only = parts[0];
  out.push({
    role: "user",
    content: parts.length === 1 && only?.type === "text" ? only.text : parts,
  });
}

function mediaPart(block: MediaBlock, documents: number): ChatContentPart | undefined {
  const source = mediaSource(block);
  if (!source) return undefined;
  if (block.kind === "image")
    return {
      type: "image_url",
      image_url: { url: source.kind === "url" ? source.url : dataUrl(source) },
    };
  if (source.kind !== "base64") return undefined;
  return {
    type: "file",
    file: { file_data: dataUrl(source), filename: fileNameFor(block.contentType, documents) },
  };
}

function pushAssistant(msg: Msg, out: ChatMessage[], extras: AssistantExtras | undefined): void {
  let text = "";
  const calls: ChatToolCallParam[] = [];
  for (const block of msg.blocks) {
    if (block.type === "text") text += renderText(block);
    else if (block.type === "tool_call") calls.push(toolCallParam(block));
  }
  const extra = extras?.(msg);
  if (!text && calls.length === 0 && !extra) return;
  out.push({
    role: "assistant",
    content: text || null,
    ...(calls.length > 0 ? { tool_calls: calls } : {}),
    ...extra,
  });
}

function toolCallParam(block: ToolCallBlock): ChatToolCallParam {
  return {
    id: block.id,
    type: "function",
    function: { name: block.name, arguments: JSON.stringify(block.input) },
  };
}
