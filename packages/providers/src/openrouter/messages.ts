import type { JsonValue, Msg } from "@alma-harness/core";
import { OPENROUTER_PROVIDER } from "./provider.js";
import type { ReasoningDetail } from "./wire.js";

/**
 * A reasoning block streamed by this adapter keeps the merged `reasoning_details` array, as JSON,
 * in its `signature` (opaque replay data, as the neutral format intends). Parsed back here.
 */
export function detailsOf(signature: string | undefined): ReasoningDetail[] | undefined {
  if (!signature?.startsWith("[")) return undefined;
  try {
    const value: unknown = JSON.parse(signature);
    return Array.isArray(value) ? (value as ReasoningDetail[]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * OpenRouter keeps reasoning across tool-use turns when the assistant message carries its
 * `reasoning_details` back. The details are the upstream model's own (signed thinking, encrypted
 * blobs), so only blocks stamped `openrouter` with the request's model are replayed; blocks from
 * another provider or model, without provenance, or without details are left out.
 */
export function reasoningDetailsExtra(
  model: string,
): (msg: Msg) => Record<string, JsonValue> | undefined {
  return (msg) => detailsFor(msg, model);
}

function detailsFor(msg: Msg, model: string): Record<string, JsonValue> | undefined {
  const details: ReasoningDetail[] = [];
  for (const block of msg.blocks) {
    if (block.type !== "reasoning") continue;
    if (block.provider !== OPENROUTER_PROVIDER || block.model !== model) continue;
    details.push(...(detailsOf(block.signature) ?? []));
  }
  return details.length > 0 ? { reasoning_details: details as unknown as JsonValue } : undefined;
}
