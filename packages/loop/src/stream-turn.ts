import type { CostReceipt } from "@alma-harness/core";
import type { TurnInput, TurnOutcome } from "./engine.js";
import { emitTo, type LoopEvent } from "./events.js";
import { StreamQueue } from "./stream-queue.js";

/**
 * The one progress vocabulary a person's screen is shown, by the engine's `streamTurn` and by the
 * conversation's `streamTurn` alike: settled main-step text, tool and usage metadata. Never token
 * deltas, reasoning or child output.
 */
export type ProgressEvent =
  | { readonly type: "text"; readonly step: number; readonly text: string }
  | {
      readonly type: "tool";
      readonly callId: string;
      readonly name: string;
      readonly isError: boolean;
    }
  | { readonly type: "usage"; readonly receipt: CostReceipt };

/** The progress event a loop event shows, or undefined (most show nothing). One mapping for both streams. */
export function progressOf(event: LoopEvent): ProgressEvent | undefined {
  if (event.type === "step.text") return { type: "text", step: event.step, text: event.text };
  if (event.type === "tool.result")
    return { type: "tool", callId: event.callId, name: event.name, isError: event.isError };
  if (event.type === "cost.receipt" && event.receipt.kind === "main")
    return { type: "usage", receipt: event.receipt };
  return undefined;
}

/** What `streamTurn` yields: progress, then the outcome. */
export type TurnStreamEvent =
  | ProgressEvent
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
export function streamFrom(
  input: TurnInput,
  run: (input: TurnInput) => Promise<TurnOutcome>,
): StreamedTurn {
  const queue = new StreamQueue<TurnStreamEvent>(STREAM_QUEUE_LIMIT);
  let attached = true;
  let overflowed = false;
  let ended = false;
  let failed: { readonly error: unknown } | undefined;
  const push = (event: TurnStreamEvent) => {
    if (!attached) return;
    // The result always fits; live events stop for good once the reader fell behind.
    if (event.type === "result") {
      queue.offer(event, true);
      return;
    }
    if (overflowed) return;
    if (!queue.offer(event)) {
      overflowed = true;
      queue.clear();
    }
  };
  const observe = (event: LoopEvent) => {
    const progress = progressOf(event);
    if (progress) push(progress);
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
      queue.wake();
      return outcome;
    },
    (error: unknown) => {
      failed = { error };
      ended = true;
      queue.wake();
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
          const event = queue.take();
          if (event) return { done: false, value: event };
          if (failed) {
            attached = false;
            throw failed.error;
          }
          if (ended) return { done: true, value: undefined };
          await queue.wait();
        }
      },
      return: async (): Promise<IteratorResult<TurnStreamEvent>> => {
        attached = false;
        queue.clear();
        return { done: true, value: undefined };
      },
    }),
  };
}
