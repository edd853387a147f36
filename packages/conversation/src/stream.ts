import type { Scope } from "@alma-harness/core";
import { StreamQueue } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import { ConversationStreamResyncError, type ResyncReason } from "./errors.js";
import type { NormalizedRequest } from "./input.js";
import { conversationRootKey } from "./keys.js";
import { type ProgressEvent, StepOutputs } from "./step-outputs.js";
import type { ConversationView } from "./views.js";

export type ConversationStreamEvent =
  | ProgressEvent
  | { readonly type: "result"; readonly view: ConversationView };

export interface ConversationStream extends AsyncIterable<ConversationStreamEvent> {
  readonly rootKey: string;
  readonly result: Promise<ConversationView>;
}

export const STREAM_QUEUE_LIMIT = 128;
export const STREAM_METADATA_LIMIT = 256 * 1024;

/**
 * Starts the turn eagerly and lets one reader follow it: one iterator, one pending `next`, a
 * bounded queue. Overflow, an unavailable step output or a failed read detach the reader with
 * `ConversationStreamResyncError`; break, return and throw detach it silently. The turn runs on.
 * When the result rejects (a request refused before admission: a conflict, `ScopeFencedError`, a
 * store error with nothing held), the iterator rejects with the same error after what it queued.
 */
export function streamConversation(
  config: ResolvedConfig,
  request: NormalizedRequest,
  run: (outputs: StepOutputs) => Promise<ConversationView>,
  read: (scope: Scope, rootKey: string) => Promise<ConversationView | null>,
): ConversationStream {
  const rootKey = conversationRootKey(request.scope, request.sessionId, request.idempotencyKey);
  const outputs = new StepOutputs(config, request, rootKey);
  const queue = new StreamQueue<ConversationStreamEvent>(STREAM_QUEUE_LIMIT);
  let bytes = 0;
  let state: "open" | "detached" | "resync" = "open";
  let resync: ResyncReason | undefined;
  let settled = false;
  let iterated = false;
  /** The result's rejection (a refusal before admission, such as `ScopeFencedError`): the iterator throws it once, after what it queued. */
  let failure: { readonly error: unknown } | undefined;
  const detach = (reason: ResyncReason) => {
    if (state !== "open") return;
    state = "resync";
    resync = reason;
    queue.clear();
    queue.wake();
  };
  outputs.listener = (event) => {
    if (state !== "open") return;
    if (event.type === "unavailable") return detach("unavailable");
    if (event.type === "read_failed") return detach("read_failed");
    const size = JSON.stringify(event).length;
    // Full (by count or by bytes), the reader is detached with a resync error: never waited for.
    if (bytes + size > STREAM_METADATA_LIMIT || !queue.offer(event)) return detach("overflow");
    bytes += size;
  };
  const result = run(outputs).then(
    (view) => {
      settled = true;
      if (state === "open" && iterated) queue.offer({ type: "result", view }, true);
      queue.wake();
      return view;
    },
    (error: unknown) => {
      settled = true;
      failure = { error };
      queue.wake();
      throw error;
    },
  );
  result.catch(() => undefined);
  let taken = false;
  let pending = false;
  return {
    rootKey,
    result,
    [Symbol.asyncIterator]() {
      if (taken) throw new TypeError("a conversation stream permits one iterator");
      taken = true;
      const late = settled;
      iterated = true;
      let lateDone = false;
      return {
        next: async (): Promise<IteratorResult<ConversationStreamEvent>> => {
          if (pending) throw new TypeError("a conversation stream permits one pending next()");
          pending = true;
          try {
            if (late) {
              if (lateDone || state !== "open") return finishOrThrow();
              lateDone = true;
              await result.catch(() => undefined);
              if (failure) return rejected();
              const view = await read(request.scope, rootKey).catch(() => undefined);
              if (!view) throw new ConversationStreamResyncError("read_failed", rootKey);
              return { done: false, value: { type: "result", view } };
            }
            for (;;) {
              if (state !== "open") return finishOrThrow();
              const event = queue.take();
              if (event) {
                bytes -= JSON.stringify(event).length;
                if (event.type === "result") state = "detached";
                return { done: false, value: event };
              }
              if (settled) {
                await result.catch(() => undefined);
                if (queue.length === 0)
                  return failure ? rejected() : { done: true, value: undefined };
                continue;
              }
              await queue.wait();
            }
          } finally {
            pending = false;
          }
        },
        return: async () => {
          if (state === "open") state = "detached";
          queue.clear();
          queue.wake();
          return { done: true, value: undefined };
        },
        throw: async (error?: unknown) => {
          if (state === "open") state = "detached";
          queue.clear();
          queue.wake();
          throw error;
        },
      };
    },
  };

  /** The result rejected: the iterator rejects with the same error, once, then is done. */
  function rejected(): never {
    state = "detached";
    throw (failure as { readonly error: unknown }).error;
  }

  function finishOrThrow(): IteratorResult<ConversationStreamEvent> {
    if (state === "resync" && resync) {
      const reason = resync;
      resync = undefined;
      state = "detached";
      throw new ConversationStreamResyncError(reason, rootKey);
    }
    return { done: true, value: undefined };
  }
}
