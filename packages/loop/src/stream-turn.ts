import type { CostReceipt } from "@alma-harness/core";
import type { TurnInput, TurnOutcome } from "./engine.js";
import type { LoopEvent } from "./events.js";

/** What `streamTurn` yields: settled main-step text, tool and usage metadata, then the outcome. */
export type TurnStreamEvent =
  | { readonly type: "text"; readonly step: number; readonly text: string }
  | { readonly type: "tool"; readonly callId: string; readonly name: string; readonly isError: boolean }
  | { readonly type: "usage"; readonly receipt: CostReceipt }
  | { readonly type: "result"; readonly outcome: TurnOutcome };

export interface StreamedTurn extends AsyncIterable<TurnStreamEvent> {
  readonly result: Promise<TurnOutcome>;
}

/**
 * Starts the turn eagerly and lets one reader follow it. Breaking out of the loop (or `return`)
 * detaches the reader only: the turn runs on and `.result` settles with the same outcome.
 */
export function streamFrom(input: TurnInput, run: (input: TurnInput) => Promise<TurnOutcome>): StreamedTurn {
  const queue: TurnStreamEvent[] = [];
  let wake: (() => void) | undefined;
  let attached = true;
  let ended = false;
  const push = (event: TurnStreamEvent) => {
    if (!attached) return;
    queue.push(event);
    wake?.();
  };
  const observe = (event: LoopEvent) => {
    if (event.type === "step.text") push({ type: "text", step: event.step, text: event.text });
    else if (event.type === "tool.result") push({ type: "tool", callId: event.callId, name: event.name, isError: event.isError });
    else if (event.type === "cost.receipt" && event.receipt.kind === "main") push({ type: "usage", receipt: event.receipt });
    input.sink?.(event);
  };
  const result = run({ ...input, sink: observe }).then((outcome) => {
    push({ type: "result", outcome });
    ended = true;
    wake?.();
    return outcome;
  });
  return {
    result,
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<TurnStreamEvent>> => {
        for (;;) {
          if (!attached) return { done: true, value: undefined };
          const event = queue.shift();
          if (event) return { done: false, value: event };
          if (ended) return { done: true, value: undefined };
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = undefined;
        }
      },
      return: async (): Promise<IteratorResult<TurnStreamEvent>> => {
        attached = false;
        queue.length = 0;
        return { done: true, value: undefined };
      },
    }),
  };
}
