import {
  type ConversationStream,
  type ConversationStreamEvent,
  ConversationStreamResyncError,
  type ConversationView,
  type RunTurnRequest,
} from "@alma-harness/conversation";
import { microsToUsd } from "@alma-harness/core";
import type { HostContext } from "./context.js";
import { describe, statusOf } from "./errors.js";
import { askEventId, endId, textId } from "./event-ids.js";
import { type SseChannel, sseResponse } from "./sse.js";
import { viewResponse } from "./views.js";

/** How long an SSE reply to a retry of a running key waits for that turn (the turn's own ceiling). */
const LIVE_WAIT_MS = 10 * 60_000;

type Progress = Exclude<ConversationStreamEvent, { type: "result" }>;

/** Progress as the wire carries it: text, tool names and flags, and costs; never payloads. */
function progressData(event: Progress): unknown {
  if (event.type === "text") return { step: event.step, text: event.text };
  if (event.type === "tool")
    return { callId: event.callId, name: event.name, isError: event.isError };
  const r = event.receipt;
  return {
    model: r.model,
    inputTokens: r.usage.inputTokens,
    outputTokens: r.usage.outputTokens,
    usdMicros: r.usdMicros,
    costUsd: microsToUsd(r.usdMicros),
  };
}

function detachedPromise(signal: AbortSignal): Promise<"detached"> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve("detached");
    signal.addEventListener("abort", () => resolve("detached"), { once: true });
  });
}

/**
 * Follows the stream until its result or the client's departure. A departure only detaches the
 * reader (`return()`); the turn keeps running, tracked by the host. A resync (overflow, an
 * unavailable step) ends the progress, and the final view still comes from the result promise.
 */
async function follow(
  stream: ConversationStream,
  channel: SseChannel,
  at: { step: number },
): Promise<ConversationView | "detached" | undefined> {
  const iterator = stream[Symbol.asyncIterator]();
  const detached = detachedPromise(channel.detached);
  try {
    for (;;) {
      const next = await Promise.race([iterator.next(), detached]);
      if (next === "detached") {
        void iterator.return?.();
        return "detached";
      }
      if (next.done) return undefined;
      if (next.value.type === "result") return next.value.view;
      if (next.value.type === "text") {
        at.step = next.value.step;
        channel.send("text", progressData(next.value), textId(at.step));
      } else channel.send(next.value.type, progressData(next.value));
    }
  } catch (error) {
    if (error instanceof ConversationStreamResyncError) {
      channel.send("resync", { reason: error.reason });
      return undefined;
    }
    throw error;
  }
}

async function sendFinal(
  host: HostContext,
  channel: SseChannel,
  view: ConversationView,
  step: number,
): Promise<void> {
  let settled = view;
  if (view.status === "in_progress") {
    const live = await Promise.race([
      host.turns.wait(view.rootKey, LIVE_WAIT_MS),
      detachedPromise(channel.detached),
    ]);
    if (live === "detached") return;
    settled = live ?? view;
  }
  sendSettled(channel, settled, step);
}

/**
 * The last events of a turn's stream. A parked turn's asks (each with its id, `<step>.<askId>`),
 * then its view without an id, so the client's last id stays on the ask: a reconnect after the
 * decision reads on from there. Any other view is the `result` (`<step>.end`), or the `error` the
 * JSON API would have answered.
 */
export function sendSettled(channel: SseChannel, view: ConversationView, step: number): void {
  if (view.status === "awaiting_approval")
    for (const ask of view.asks)
      channel.send(
        "permission",
        {
          askId: ask.askId,
          tool: ask.tool,
          action: ask.action,
          state: "pending",
          expiresAt: ask.expiresAt,
        },
        askEventId(step, ask.askId),
      );
  const id = view.status === "awaiting_approval" ? undefined : endId(step);
  try {
    const { status, body } = viewResponse(view);
    channel.send("result", { httpStatus: status, ...body }, id);
  } catch (error) {
    const { code, message } = describe(error);
    channel.send("error", { status: statusOf(code), error: { code, message } }, id);
  }
}

/**
 * `POST …/turns` with `Accept: text/event-stream`. Input errors throw here, before the stream
 * opens (a JSON 4xx). Then: `text`, `tool`, `usage` and `permission` events as they settle, and one
 * `result` (or `error`) event carrying what the JSON API would have answered. Text, asks and the
 * result carry resumable ids (`event-ids.ts`): `GET /v1/turns/:rootKey` with `Last-Event-ID` reads
 * on from any of them (`follow-turn.ts`). `onEnd` runs once the turn ends, parks or fails, whether
 * or not a client still reads.
 */
export function streamTurnSse(
  host: HostContext,
  turn: RunTurnRequest,
  rootKey: string,
  onEnd: () => void = () => undefined,
): Response {
  const stream = host.turns.track(rootKey, turn.scope, turn.sessionId, host.clock.now(), () =>
    host.runtime.runner.streamTurn(turn),
  );
  void stream.result.then(onEnd, onEnd);
  return sseResponse(
    async (channel) => {
      const unsubscribe = host.asks.subscribe(rootKey, (ask, state) =>
        channel.send("permission", {
          askId: ask.id,
          tool: ask.tool,
          action: ask.action,
          subject: ask.subject,
          state,
        }),
      );
      try {
        const at = { step: 0 };
        const seen = await follow(stream, channel, at);
        if (seen === "detached") return;
        await sendFinal(host, channel, seen ?? (await stream.result), at.step);
      } finally {
        unsubscribe();
      }
    },
    // Where a client that loses the stream reads on (with its `Last-Event-ID`).
    { pingMs: host.http.pingMs, headers: { location: `/v1/turns/${rootKey}` } },
  );
}
