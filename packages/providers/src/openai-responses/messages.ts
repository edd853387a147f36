import {
  type Block,
  type JsonObject,
  type MediaBlock,
  type Msg,
  type ReasoningBlock,
  SEARCH_TOOLS_NAME,
  type TextBlock,
} from "@alma-harness/core";
import { dataUrl, fileNameFor, mediaSource } from "../shared/media.js";
import { renderText, renderToolOutput } from "../shared/text.js";
import { type NativeSearch, searchCallItem, searchOutputItem } from "./tool-search.js";
import type { InputContent, InputItem } from "./wire.js";

export const RESPONSES_PROVIDER = "openai";

/** System blocks become `instructions` (the Responses API's system slot). */
export function toInstructions(system: readonly TextBlock[]): string | undefined {
  const text = system
    .map(renderText)
    .filter((t) => t.length > 0)
    .join("\n\n");
  return text || undefined;
}

/**
 * Neutral messages → Responses input items, stateless (`store: false`): an assistant message's
 * blocks become items in order — reasoning items (id and encrypted content, as streamed), text as
 * an assistant message, function calls, and OpenAI built-in tool calls as received. A user
 * message's tool results become `function_call_output` items first, then one user message.
 * Loading natively (`native`), `search_tools` calls and results are the tool search's items.
 */
export function toInputItems(messages: readonly Msg[], native?: NativeSearch): InputItem[] {
  const items: InputItem[] = [];
  for (const msg of messages) {
    if (msg.role === "user") pushUser(msg.blocks, items, native);
    else pushAssistant(msg.blocks, items, native);
  }
  return items;
}

function pushUser(
  blocks: readonly Block[],
  items: InputItem[],
  native: NativeSearch | undefined,
): void {
  const content: InputContent[] = [];
  let documents = 0;
  for (const block of blocks) {
    if (block.type === "tool_result" && native && block.name === SEARCH_TOOLS_NAME) {
      // Loading natively: the search's output carries its loads; its text follows in this message.
      items.push(searchOutputItem(block, native));
      const text = renderToolOutput(block.output);
      if (text) content.push({ type: "input_text", text });
    } else if (block.type === "tool_result")
      items.push({
        type: "function_call_output",
        call_id: block.callId,
        output: renderToolOutput(block.output),
      });
    else if (block.type === "text") {
      const text = renderText(block);
      if (text) content.push({ type: "input_text", text });
    } else if (block.type === "media") {
      const part = mediaContent(block, documents);
      if (part?.type === "input_file") documents += 1;
      if (part) content.push(part);
    }
  }
  if (content.length > 0) items.push({ role: "user", content });
}

function mediaContent(block: MediaBlock, documents: number): InputContent | undefined {
  const source = mediaSource(block);
  if (!source) return undefined;
  const url = source.kind === "url" ? source.url : dataUrl(source);
  if (block.kind === "image") return { type: "input_image", image_url: url, detail: "auto" };
  if (source.kind === "url") return { type: "input_file", file_url: url };
  return {
    type: "input_file",
    file_data: url,
    filename: fileNameFor(block.contentType, documents),
  };
}

function pushAssistant(
  blocks: readonly Block[],
  items: InputItem[],
  native: NativeSearch | undefined,
): void {
  let text = "";
  const flush = () => {
    if (text) items.push({ role: "assistant", content: text });
    text = "";
  };
  for (const block of blocks) {
    if (block.type === "text") {
      text += renderText(block);
      continue;
    }
    flush();
    if (block.type === "tool_call" && native && block.name === SEARCH_TOOLS_NAME) {
      items.push(searchCallItem(block));
    } else if (block.type === "tool_call") {
      items.push({
        type: "function_call",
        call_id: block.id,
        name: block.name,
        arguments: JSON.stringify(block.input),
      });
    } else if (block.type === "reasoning") {
      const item = reasoningItem(block);
      if (item) items.push(item);
    } else if (
      block.type === "provider_tool_call" &&
      block.provider === RESPONSES_PROVIDER &&
      isItem(block.payload)
    ) {
      items.push(block.payload);
    }
  }
  flush();
}

/**
 * Only reasoning this provider streamed can be replayed: its item id and encrypted content. A
 * block stamped with another provider, or with no provenance, is left out.
 */
function reasoningItem(block: ReasoningBlock): InputItem | undefined {
  if (block.provider !== RESPONSES_PROVIDER) return undefined;
  if (!block.signature?.startsWith("rs_") || !block.redacted) return undefined;
  return {
    type: "reasoning",
    id: block.signature,
    encrypted_content: block.redacted,
    summary: block.text ? [{ type: "summary_text", text: block.text }] : [],
  };
}

function isItem(value: unknown): value is JsonObject {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    typeof (value as JsonObject).type === "string"
  );
}
