import type { Scope } from "@alma-harness/core";
import { StreamQueue } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import { ConversationStreamResyncError, type ResyncReason } from "./errors.js";
import type { NormalizedRequest } from "./request.js";
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

/** A stream's state between the turn (the writer) and its one reader. */
class Relay {
  readonly queue = new StreamQueue<ConversationStreamEvent>(STREAM_QUEUE_LIMIT);
  bytes = 0;
  state: "open" | "detached" | "resync" = "open";
  resync: ResyncReason | undefined;
  settled = false;
  iterated = false;
  taken = false;
  pending = false;
  /** The result's rejection (a refusal before admission, such as `ScopeFencedError`): the iterator throws it once, after what it queued. */
  failure: { readonly error: unknown } | undefined;

  constructor(readonly rootKey: string) {}

  detach(reason: ResyncReason): void {
    if (this.state !== "open") return;
    this.state = "resync";
    this.resync = reason;
    this.queue.clear();
    this.queue.wake();
  }

  /** A progress event from the turn: queued, or the reader detached (never waited for). */
  offer(event: Parameters<NonNullable<StepOutputs["listener"]>>[0]): void {
    if (this.state !== "open") return;
    if (event.type === "unavailable" || event.type === "read_failed") {
      this.detach(event.type);
      return;
    }
    const size = JSON.stringify(event).length;
    // Full (by count or by bytes), the reader is detached with a resync error: never waited for.
    if (this.bytes + size > STREAM_METADATA_LIMIT || !this.queue.offer(event)) {
      this.detach("overflow");
      return;
    }
    this.bytes += size;
  }

  stop(): void {
    if (this.state === "open") this.state = "detached";
    this.queue.clear();
    this.queue.wake();
  }

  /** The result rejected: the iterator rejects with the same error, once, then is done. */
  rejected(): never {
    this.state = "detached";
    throw (this.failure as { readonly error: unknown }).error;
  }

  finishOrThrow(): IteratorResult<ConversationStreamEvent> {
    if (this.state === "resync" && this.resync) {
      const reason = this.resync;
      this.resync = undefined;
      this.state = "detached";
      throw new ConversationStreamResyncError(reason, this.rootKey);
    }
    return { done: true, value: undefined };
  }
}

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
  const { rootKey } = request;
  const outputs = new StepOutputs(config, request, rootKey);
  const relay = new Relay(rootKey);
  outputs.listener = (event) => relay.offer(event);
  const result = run(outputs).then(
    (view) => {
      relay.settled = true;
      if (relay.state === "open" && relay.iterated)
        relay.queue.offer({ type: "result", view }, true);
      relay.queue.wake();
      return view;
    },
    (error: unknown) => {
      relay.settled = true;
      relay.failure = { error };
      relay.queue.wake();
      throw error;
    },
  );
  result.catch(() => undefined);
  return {
    rootKey,
    result,
    [Symbol.asyncIterator]() {
      if (relay.taken) throw new TypeError("a conversation stream permits one iterator");
      relay.taken = true;
      const next = relay.settled
        ? lateNext(relay, result, () => read(request.scope, rootKey))
        : liveNext(relay, result);
      relay.iterated = true;
      return {
        next: async (): Promise<IteratorResult<ConversationStreamEvent>> => {
          if (relay.pending)
            throw new TypeError("a conversation stream permits one pending next()");
          relay.pending = true;
          try {
            return await next();
          } finally {
            relay.pending = false;
          }
        },
        return: async () => {
          relay.stop();
          return { done: true, value: undefined };
        },
        throw: async (error?: unknown) => {
          relay.stop();
          throw error;
        },
      };
    },
  };
}

/** A reader that came before the result: the queued events, then the result event. */
function liveNext(relay: Relay, result: Promise<ConversationView>) {
  return async (): Promise<IteratorResult<ConversationStreamEvent>> => {
    for (;;) {
      if (relay.state !== "open") return relay.finishOrThrow();
      const event = relay.queue.take();
      if (event) {
        relay.bytes -= JSON.stringify(event).length;
        if (event.type === "result") relay.state = "detached";
        return { done: false, value: event };
      }
      if (relay.settled) {
        await result.catch(() => undefined);
        if (relay.queue.length === 0)
          return relay.failure ? relay.rejected() : { done: true, value: undefined };
        continue;
      }
      await relay.queue.wait();
    }
  };
}

/** A first reader after the result settled: only a freshly authorized final view. */
function lateNext(
  relay: Relay,
  result: Promise<ConversationView>,
  read: () => Promise<ConversationView | null>,
) {
  let lateDone = false;
  return async (): Promise<IteratorResult<ConversationStreamEvent>> => {
    if (lateDone || relay.state !== "open") return relay.finishOrThrow();
    lateDone = true;
    await result.catch(() => undefined);
    if (relay.failure) return relay.rejected();
    const view = await read().catch(() => undefined);
    if (!view) throw new ConversationStreamResyncError("read_failed", relay.rootKey);
    return { done: false, value: { type: "result", view } };
  };
}
