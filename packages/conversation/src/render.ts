import type { Block, Msg } from "@alma-harness/core";
import type { EventLabels } from "./config.js";

export const DEFAULT_EVENT_LABELS: Required<EventLabels> = {
  human: "Message from the team, shown to the person",
  system: "Automatic notice, shown to the person",
  undelivered: "The person did not receive the previous reply (recorded {at})",
};

/**
 * The view a request is built from: a product-side message (origin human or system) reaches the
 * model as the person's side with its label, never as the model's own speech; the log is unchanged.
 */
export function renderEvents(
  messages: readonly Msg[],
  labels: EventLabels | undefined,
): readonly Msg[] {
  const l = { ...DEFAULT_EVENT_LABELS, ...labels };
  let changed = false;
  const out = messages.map((msg) => {
    const productSide =
      msg.role === "assistant" &&
      msg.blocks.some((b) => b.type === "text" && (b.origin === "human" || b.origin === "system"));
    if (!productSide) return msg;
    changed = true;
    const blocks: Block[] = msg.blocks.map((b) =>
      b.type === "text" && (b.origin === "human" || b.origin === "system")
        ? { type: "text", text: `[${b.label ?? l[b.origin]}] ${b.text}`, origin: b.origin }
        : b,
    );
    return { ...msg, role: "user" as const, blocks };
  });
  return changed ? out : messages;
}
