import {
  type ConversationRootDescriptor,
  type ConversationStores,
  createConversationDescriptor,
  type ExplicitTurnRequest,
} from "@alma-harness/conversation";
import { ValidationError } from "@alma-harness/core";
import { scriptedText } from "@alma-harness/loop/testing";
import { expect } from "vitest";
import { SCOPE, type SetupOptions, setup } from "./harness.js";

export const INTENT = { tier: "balanced", sensitivity: "internal" } as const;
/** The harness runner's root settings (`setup()`): what a descriptor must match. */
export const SETTINGS = {
  configRevision: "rev-1",
  resultRetentionMs: 86_400_000,
  maxCalls: 6,
  maxInputChars: 10_000,
} as const;

/** Every store method call, counted: "before any I/O" means this stays 0. */
function counting(stores: ConversationStores): { stores: ConversationStores; calls: () => number } {
  let n = 0;
  const wrap = <T extends object>(store: T): T =>
    new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => {
          n += 1;
          return value.apply(target, args);
        };
      },
    });
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(stores))
    out[k] = typeof v === "object" && v !== null ? wrap(v) : v;
  return { stores: out as unknown as ConversationStores, calls: () => n };
}

export function harness(opts: SetupOptions = {}) {
  let count!: ReturnType<typeof counting>;
  const t = setup({
    script: [scriptedText("We open at nine.")],
    ...opts,
    wrap: (s) => {
      count = counting(opts.wrap ? opts.wrap(s) : s);
      return count.stores;
    },
  });
  let loads = 0;
  /** A `loadInput` that counts its calls and returns `input`. */
  const loader =
    (input: unknown = "When are you open on Monday?") =>
    () => {
      loads += 1;
      return input;
    };
  /** An arbitrary explicit root named by the host. */
  const root = (over: Partial<Record<keyof ConversationRootDescriptor, unknown>> = {}) =>
    ({
      version: 1,
      scope: SCOPE,
      sessionId: "s1",
      rootId: "visit-42",
      inputRevision: "rev-a",
      configRevision: SETTINGS.configRevision,
      resultContractVersion: 1,
      resultRetentionMs: SETTINGS.resultRetentionMs,
      caps: {},
      maxCalls: SETTINGS.maxCalls,
      sensitivity: "internal",
      deadlineAt: t.clock.now() + 60_000,
      ...over,
    }) as ConversationRootDescriptor;
  const explicit = (
    over: Partial<ExplicitTurnRequest> & Record<string, unknown> = {},
  ): ExplicitTurnRequest => ({ root: root(), intent: INTENT, loadInput: loader(), ...over });
  /** The descriptor `createConversationDescriptor` makes for `t.request(key)`. */
  const described = (key: string, deadlineAt = t.clock.now() + 60_000) =>
    createConversationDescriptor(
      { ...SETTINGS, resultContractVersion: 1 },
      t.request(key),
      deadlineAt,
    );
  return {
    t,
    ioCalls: () => count.calls(),
    loads: () => loads,
    loader,
    root,
    explicit,
    described,
  };
}

export async function refused(h: ReturnType<typeof harness>, request: unknown, rule: string) {
  const before = h.ioCalls();
  const loads = h.loads();
  const error = await h.t.runner.runTurn(request as ExplicitTurnRequest).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ValidationError);
  expect((error as ValidationError).rule).toBe(rule);
  expect(() => h.t.runner.streamTurn(request as ExplicitTurnRequest)).toThrow(ValidationError);
  expect(h.ioCalls() - before).toBe(0);
  expect(h.loads()).toBe(loads);
}
