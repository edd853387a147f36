import type { JsonValue, Msg } from "@alma-harness/core";
import type { ReasoningDetail } from "./wire.js";

export const OPENROUTER_PROVIDER = "openrouter";

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
 * `reasoning_details` back. Blocks from another provider, or without details, are left out.
 */
export function reasoningDetailsExtra(msg: Msg): Record<string, JsonValue> | undefined {
  const details: ReasoningDetail[] = [];
  for (const block of msg.blocks) {
    if (block.type !== "reasoning") continue;
    if (block.provider !== undefined && block.provider !== OPENROUTER_PROVIDER) continue;
    details.push(...(detailsOf(block.signature) ?? []));
  }
  return details.length > 0 ? { reasoning_details: details as unknown as JsonValue } : undefined;
}
