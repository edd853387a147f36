import type { Block, StreamToolCall } from "@alma-harness/core";
import type { Ending, LastKind } from "./limits.js";

/**
 * What the turn does next. Each stage takes what it needs and returns one of these; the driver
 * (`driver.ts`) alone holds the whole turn and asks "what next?" until the answer is `finish`.
 */
export type Next =
  | { readonly kind: "call_model" }
  | {
      readonly kind: "run_tools";
      /** The main step whose calls these are. */
      readonly step: number;
      readonly calls: readonly StreamToolCall[];
      /** The step's recorded assistant blocks (a terminal tool's reply is taken from them). */
      readonly blocks: readonly Block[];
      readonly last: LastKind | undefined;
    }
  | { readonly kind: "finish"; readonly ending: Ending };

export type RunTools = Extract<Next, { kind: "run_tools" }>;

export const CALL_MODEL: Next = Object.freeze({ kind: "call_model" });

export function finish(ending: Ending): Next {
  return { kind: "finish", ending };
}
