import {
  type ConversationConfig,
  type ConversationView,
  createConversationRunner,
  type UncertainTurnEvent,
} from "@alma-harness/conversation";
import { type ModelChoice, ProviderError } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import type { FakeModelClient } from "@alma-harness/loop/testing";
import { clinicConfig } from "./open.js";
import { type OpenedStores, openStores } from "./store-kit.js";

/** Shared by the call-retry suites (spec: call-retry). */
export const SCOPE = { org: "clinic-a", uid: "u1" };
export const CHOICE: ModelChoice = {
  clientId: "fake",
  model: "demo",
  maxOutputTokens: 512,
  cache: false,
};
export const request = (key: string) => ({
  scope: SCOPE,
  sessionId: "s1",
  idempotencyKey: key,
  input: "When are you open?",
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});
export const unavailable = () =>
  new ProviderError("fake HTTP 503", { kind: "server", provider: "fake", status: 503 });
export const rateLimited = () =>
  new ProviderError("anthropic HTTP 429 (rate_limit_error): slow down", {
    kind: "rate_limited",
    provider: "anthropic",
    status: 429,
    rejection: { kind: "anthropic_rate_limit_v1", provider: "anthropic", status: 429 },
  });

/** One store method failing once, before its effect or after it ("executed, then reported a failure"). */
export function failOnce<T extends object>(
  store: T,
  method: string,
  when: "before" | "after",
  skip = 0,
): T {
  let seen = 0;
  return new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== method || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const mine = seen++ === skip;
        if (mine && when === "before") throw new Error(`injected: ${method} before`);
        const out = await (value as (...a: unknown[]) => unknown).apply(target, args);
        if (mine && when === "after") throw new Error(`injected: ${method} after`);
        return out;
      };
    },
  });
}

export interface Setup {
  readonly model: FakeModelClient;
  readonly attempts?: number;
  readonly over?: Partial<ConversationConfig>;
  readonly wrap?: (stores: OpenedStores["stores"]) => OpenedStores["stores"];
}

export function completed(view: ConversationView) {
  if (view.status !== "completed") throw new Error(`expected completed, got ${view.status}`);
  return view.result;
}

/** Waits until the clock has a sleeper armed (a call waiting on its round), then moves it on. */
export async function advanceWhenArmed(clock: ManualClock, ms: number, armed = 1): Promise<void> {
  // Waits by the wall clock, not by a count of loop turns: on a loaded machine the store's round
  // trips before the timer is armed can outlast any fixed number of turns, and advancing too early
  // would leave the turn waiting on a timer that never fires.
  const deadline = Date.now() + 15_000;
  for (let i = 0; clock.pending < armed; i++) {
    if (Date.now() > deadline)
      throw new Error(`${clock.pending} of ${armed} timers armed after 15 s`);
    await new Promise((r) => (i < 1_000 ? setImmediate(r) : setTimeout(r, 2)));
  }
  clock.advance(ms);
}

/** A runner on a fresh store set of `kind`, with the setup's model, attempts, overrides and wrapped stores. */
export async function openRetry(kind: "memory" | "sqlite" | "postgres", s: Setup) {
  const opened = await openStores(kind, "retry");
  const stores = s.wrap ? s.wrap(opened.stores) : opened.stores;
  const uncertain: UncertainTurnEvent[] = [];
  const clock = new ManualClock();
  const runner = createConversationRunner({
    ...clinicConfig(s.model),
    ...(s.attempts !== undefined ? { callAttempts: s.attempts } : {}),
    onUncertainTurn: (e) => uncertain.push(e),
    clock,
    ...s.over,
    stores,
  });
  return { runner, stores: opened.stores, uncertain, clock, close: opened.close };
}
