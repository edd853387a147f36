import type { ConversationView } from "@alma-harness/conversation";
import type { Scope } from "@alma-harness/core";
import type { HostContext } from "./context.js";
import { type EventCursor, textId } from "./event-ids.js";
import { type SseChannel, sseResponse } from "./sse.js";
import { sendSettled } from "./stream-turn.js";

/** How often a follower reads the store again while the turn runs or waits for a decision. */
const FOLLOW_POLL_MS = 250;
/** How long one follow stream stays open on an unsettled turn before it ends (the client reconnects). */
const FOLLOW_MAX_MS = 10 * 60_000;

/**
 * `GET /v1/turns/:rootKey` with `Accept: text/event-stream`: the turn's stream from after the
 * `Last-Event-ID` position, for a client that lost its stream (or reads on after a park).
 * 1. The stored step texts after the cursor, each read again under retention and erasure (an erased
 *    or expired one ends the replay with `resync`, as the live stream would), with their ids.
 * 2. Then, while the turn runs (here or in another process) or waits on an ask the client has
 *    already seen, new step texts as they are stored; a park the client has not seen ends the
 *    stream with its asks.
 * 3. Then the settled view. Every event comes once per position: a reconnect from any id sent
 *    yields exactly what came after it.
 */
export function followTurnSse(
  host: HostContext,
  scope: Scope,
  rootKey: string,
  cursor: EventCursor,
): Response {
  return sseResponse(
    async (channel) => {
      const until = host.clock.now() + FOLLOW_MAX_MS;
      let step = cursor.step;
      let seenAsk = cursor.kind === "ask" ? cursor.askId : undefined;
      for (;;) {
        const read = await host.runtime.runner.readSteps(scope, rootKey, step);
        if (read.status === "unavailable") {
          channel.send("resync", { reason: "unavailable" });
          const view = await host.runtime.runner.read(scope, rootKey);
          if (view) sendSettled(channel, view, step);
          return;
        }
        for (const s of read.steps) {
          channel.send("text", { step: s.step, text: s.text }, textId(s.step));
          step = s.step;
          seenAsk = undefined;
        }
        const view = await host.runtime.runner.read(scope, rootKey);
        if (!view) return;
        if (!waiting(view, seenAsk) || host.clock.now() >= until) {
          sendSettled(channel, view, step);
          return;
        }
        if (await pause(channel, FOLLOW_POLL_MS)) return;
      }
    },
    { pingMs: host.http.pingMs },
  );
}

/** Whether the follower waits on: the turn runs, or it is parked on the ask the client last saw. */
function waiting(view: ConversationView, seenAsk: string | undefined): boolean {
  if (view.status === "in_progress") return true;
  return view.status === "awaiting_approval" && view.asks.at(-1)?.askId === seenAsk;
}

/** Waits `ms`; true when the client went away meanwhile. */
async function pause(channel: SseChannel, ms: number): Promise<boolean> {
  if (channel.detached.aborted) return true;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    channel.detached.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
  return channel.detached.aborted;
}
