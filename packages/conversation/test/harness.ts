import type {
  ConversationConfig,
  ConversationStores,
  UncertainTurnEvent,
} from "@alma-harness/conversation";
import { createConversationRunner } from "@alma-harness/conversation";
import { defineTool, type PriceTable, type ToolDefinition } from "@alma-harness/core";
import {
  inMemoryStores,
  ManualClock,
  RecordingAuditLog,
  SequentialIds,
} from "@alma-harness/core/testing";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";

export const PRICES: PriceTable = {
  version: "prices-1",
  models: {
    "fake-main": { rates: { input: 3, output: 15 } },
    "fake-small": { rates: { input: 1, output: 5 } },
  },
};
export const SCOPE = { org: "clinic-a", uid: "u1" } as const;

export const lookupTool = defineTool({
  name: "lookup",
  description: "Looks up opening hours.",
  input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
  handler: (input) => ({ day: input.day as string, open: "09:00-17:00" }),
});

/** A product-side message a professional sent (`recordEvents`), by id and text. */
export const humanMessage = (id: string, text = "Hi, this is Ana from the clinic.") => ({
  id,
  at: "2026-10-04T12:00:00Z",
  kind: "message" as const,
  role: "assistant" as const,
  origin: "human" as const,
  blocks: [{ type: "text" as const, text }],
});

/** Wraps every method of a store so a test can make the next call fail before or after its effect. */
export function faulty<T extends object>(
  store: T,
): T & { failNext(method: string, when: "before" | "after"): void } {
  const plans = new Map<string, "before" | "after">();
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "failNext")
        return (method: string, when: "before" | "after") => plans.set(method, when);
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        const plan = plans.get(String(prop));
        if (plan) plans.delete(String(prop));
        if (plan === "before") throw new Error(`injected failure before ${String(prop)}`);
        const out = await value.apply(target, args);
        if (plan === "after")
          throw new Error(`injected failure after ${String(prop)} (acknowledgement lost)`);
        return out;
      };
    },
  });
  return proxy as T & { failNext(method: string, when: "before" | "after"): void };
}

export interface SetupOptions {
  readonly script?: ScriptedResponse[];
  /** Responses of the `small` client, which serves summaries. */
  readonly smallScript?: ScriptedResponse[];
  /** The main client's provider (default `fake`), for provider-bound rejection proofs. */
  readonly provider?: string;
  readonly tools?: ToolDefinition[];
  readonly config?: Partial<ConversationConfig>;
  readonly wrap?: (s: ConversationStores) => ConversationStores;
}

export function setup(opts: SetupOptions = {}) {
  const base = inMemoryStores({ audit: new RecordingAuditLog() });
  const stores = opts.wrap ? opts.wrap(base) : base;
  const model = new FakeModelClient(
    opts.script ?? [],
    opts.provider ? { provider: opts.provider } : {},
  );
  const small = new FakeModelClient(opts.smallScript ?? [], { id: "small" });
  const clock = new ManualClock();
  const uncertain: UncertainTurnEvent[] = [];
  const runner = createConversationRunner({
    stores,
    clients: [model, small],
    policy: {
      resolve: (intent) =>
        intent.task === "summary"
          ? { clientId: "small", model: "fake-small", maxOutputTokens: 256, cache: false }
          : { clientId: "fake", model: "fake-main", maxOutputTokens: 512, cache: false },
    },
    prompt: "You are the front desk of a clinic.",
    tools: opts.tools ?? [lookupTool],
    prices: PRICES,
    policyVersion: "policy-1",
    priceVersion: "prices-1",
    configRevision: "rev-1",
    resultRetentionMs: 86_400_000,
    runTimeoutMs: 120_000,
    maxCalls: 6,
    maxInputChars: 10_000,
    clock,
    ids: new SequentialIds(),
    onUncertainTurn: (e) => uncertain.push(e),
    ...opts.config,
  });
  const request = (key: string, input = "When are you open on Monday?", sessionId = "s1") => ({
    scope: SCOPE,
    sessionId,
    idempotencyKey: key,
    input,
    intent: { tier: "balanced" as const, sensitivity: "internal" as const },
  });
  return { runner, model, small, stores: base, clock, uncertain, request };
}

/** `setup` with one store wrapped by `faulty`, returned beside the turn harness. */
export function withFaulty<
  K extends Exclude<keyof ConversationStores, "barrier" | "unit" | "usageInbox" | "parked">,
>(key: K, opts: SetupOptions = {}) {
  let store!: ReturnType<typeof faulty<ConversationStores[K]>>;
  const t = setup({
    ...opts,
    wrap: (s) => {
      store = faulty(s[key]);
      return { ...s, [key]: store };
    },
  });
  return { t, store };
}
