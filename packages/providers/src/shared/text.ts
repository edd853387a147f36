import type { JsonValue, TextBlock } from "@alma-harness/core";

/**
 * The text the model reads for a neutral text block. A `human` or `system` block with a label is
 * prefixed with it (`Dr. Ruiz: …`) so the model can tell a professional's or the product's words
 * from the person's; everything else goes verbatim, so replays stay byte-identical.
 */
export function renderText(block: TextBlock): string {
  if ((block.origin === "human" || block.origin === "system") && block.label)
    return `${block.label}: ${block.text}`;
  return block.text;
}

/** A tool observation as text: strings verbatim, any other JSON value serialized. */
export function renderToolOutput(output: JsonValue): string {
  return typeof output === "string" ? output : JSON.stringify(output);
}
