import type { Block, StreamToolCall, ToolResultBlock } from "@alma-harness/core";
import type { AskDecision } from "./asks.js";
import type { PendingAsk } from "./continuation.js";
import type { Ending, LastKind } from "./limits.js";

/** Where one call of a step stands: not run yet, waiting for a person, or answered. */
export type CallProgress =
  | { readonly state: "requested" }
  | { readonly state: "asked"; readonly ask: PendingAsk }
  /** An ask with its decision, to run (allowed) or answer as denied when the step resumes. */
  | { readonly state: "decided"; readonly ask: PendingAsk; readonly decision: AskDecision }
  | { readonly state: "done"; readonly result: ToolResultBlock };

/**
 * What the turn does next. Each stage takes what it needs and returns one of these; the driver
 * (`driver.ts`) alone holds the whole turn and asks "what next?" until the answer is `finish`.
 */
export type Next =
  | { readonly kind: "call_model" }
  | RunTools
  /** The step waits for a person: its calls' progress, with at least one `asked`. */
  | {
      readonly kind: "park";
      readonly tools: RunTools & { readonly progress: readonly CallProgress[] };
    }
  | { readonly kind: "finish"; readonly ending: Ending };

export interface RunTools {
  readonly kind: "run_tools";
  /** The main step whose calls these are. */
  readonly step: number;
  readonly calls: readonly StreamToolCall[];
  /** The step's recorded assistant blocks (a terminal tool's reply is taken from them). */
  readonly blocks: readonly Block[];
  readonly last: LastKind | undefined;
  /** Index-aligned with `calls` when part of the step already happened (a resumed step). */
  readonly progress?: readonly CallProgress[];
}

export const CALL_MODEL: Next = Object.freeze({ kind: "call_model" });

export function finish(ending: Ending): Next {
  return { kind: "finish", ending };
}
