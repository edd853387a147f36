import type { ModelStreamEvent } from "@alma-harness/core";
import { asCount, asRecord, asString, type NeutralStream } from "../shared/neutral.js";
import type { ChatReasoningReader } from "../openai-chat/stream.js";
import type { ReasoningDetail } from "./wire.js";

/**
 * OpenRouter reasoning: `reasoning_details` items (text with a signature arriving later, summaries,
 * encrypted blobs) merged per `index` and `type`; their text streams as reasoning, and when the
 * reasoning ends the merged array closes the block as its replay data. A delta with only plain
 * `reasoning` text streams that text (nothing to replay).
 */
export function openRouterReasoning(): ChatReasoningReader {
  let details: ReasoningDetail[] = [];
  let open = false;
  return {
    read(delta, neutral, out) {
      const list = Array.isArray(delta.reasoning_details) ? delta.reasoning_details : [];
      if (list.length > 0) {
        for (const item of list) {
          const detail = asRecord(item) as ReasoningDetail | undefined;
          if (!detail || typeof detail.type !== "string") continue;
          const text =
            detail.type === "reasoning.summary" ? asString(detail.summary) : asString(detail.text);
          if (text) neutral.reasoning(text, {}, out);
          details = mergeDetail(details, detail);
          open = true;
        }
        return;
      }
      const text = asString(delta.reasoning);
      if (text) {
        neutral.reasoning(text, {}, out);
        open = true;
      }
    },
    close(neutral: NeutralStream, out: ModelStreamEvent[]) {
      if (!open) return;
      open = false;
      if (details.length > 0) neutral.reasoning("", { signature: JSON.stringify(details) }, out);
      details = [];
    },
  };
}

function mergeDetail(details: ReasoningDetail[], next: ReasoningDetail): ReasoningDetail[] {
  const index = asCount(next.index);
  const at = details.findIndex((d) => d.type === next.type && asCount(d.index) === index);
  if (at < 0) return [...details, { ...next }];
  const prev = details[at] as ReasoningDetail;
  const merged: ReasoningDetail = { ...prev };
  for (const [key, value] of Object.entries(next)) {
    if (value === undefined || value === null || value === "") continue;
    merged[key] =
      (key === "text" || key === "summary") && typeof prev[key] === "string"
        ? `${prev[key]}${value}`
        : value;
  }
  return details.map((d, i) => (i === at ? merged : d));
}
