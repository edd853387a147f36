import type { CostReceipt } from "@alma-harness/core";
import type { TurnInput, TurnOutcome } from "./engine.js";
import { emitTo, type LoopEvent } from "./events.js";

/** What `streamTurn` yields: settled main-step text, tool and usage metadata, then the outcome. */
export type TurnStreamEvent =
  | { readonly type: "text"; readonly step: number; readonly text: string }
  | { readonly type: "tool"; readonly callId: string; readonly name: string; readonly isError: boolean }
  | { readonly type: "usage"; readonly receipt: CostReceipt }
  | { readonly type: "result"; readonly outcome: TurnOutcome };

export interface StreamedTurn extends AsyncIterable<TurnStreamEvent> {
  readonly result: Promise<TurnOutcome>;
}

/** A reader this far behind is detached from the live events; it still receives the result. */
export const STREAM_QUEUE_LIMIT = 1024;

/**
 * Starts the turn eagerly and lets one reader follow it, on the same engine as `runTurn`.
 * Breaking out of the loop (or `return`) detaches the reader only: the turn runs on and `.result`
 * settles with the same outcome. A reader that falls `STREAM_QUEUE_LIMIT` events behind loses the
 * live events (never waited for) and then receives the result. Invalid input rejects `.result`
 * and the iterator alike.
 */
export function streamFrom(input: TurnInput, run: (input: TurnInput) => Promise<TurnOutcome>): StreamedTurn {
  const queue: TurnStreamEvent[] = [];
  let wake: (() => void) | undefined;
  let attached = true;
  let overflowed = false;
  let ended = false;
  let failed: { readonly error: unknown } | undefined;
  const push = (event: TurnStreamEvent) => {
    if (!attached) return;
    if (event.type !== "result") {
      if (overflowed) return;
      if (queue.length >= STREAM_QUEUE_LIMIT) {
        overflowed = true;
        queue.length = 0;
        return;
      }
    }
    queue.push(event);
    wake?.();
  };
  const observe = (event: LoopEvent) => {
    if (event.type === "step.text") push({ type: "text", step: event.step, text: event.text });
    else if (event.type === "tool.result") push({ type: "tool", callId: event.callId, name: event.name, isError: event.isError });
    else if (event.type === "cost.receipt" && event.receipt.kind === "main") push({ type: "usage", receipt: event.receipt });
    emitTo(input?.sink, event);
  };
  let started: Promise<TurnOutcome>;
  try {
    started = run({ ...input, sink: observe });
  } catch (error) {
    started = Promise.reject(error);
  }
  const result = started.then(
    (outcome) => {
      push({ type: "result", outcome });
      ended = true;
      wake?.();
      return outcome;
    },
    (error: unknown) => {
      failed = { error };
      ended = true;
      wake?.();
      throw error;
    },
  );
  // The rejection is the reader's to see; it must not surface as unhandled when nobody awaits `.result`.
  result.catch(() => undefined);
  return {
    result,
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<TurnStreamEvent>> => {
        for (;;) {
          if (!attached) return { done: true, value: undefined };
          const event = queue.shift();
          if (event) return { done: false, value: event };
          if (failed) {
            attached = false;
            throw failed.error;
          }
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
