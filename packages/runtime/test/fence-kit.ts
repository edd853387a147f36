import type { ConversationStores } from "@alma-harness/conversation";
import { createConversationRunner, type UncertainTurnEvent } from "@alma-harness/conversation";
import {
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
} from "@alma-harness/core";
import { ManualClock, SequentialIds } from "@alma-harness/core/testing";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";
import { clinicConfig } from "./open.js";

/** A gate a test opens: calls and handlers wait on it, so the test acts while they are in flight. */
export class Gate {
  #open!: () => void;
  readonly opened = new Promise<void>((resolve) => {
    this.#open = resolve;
  });
  open(): void {
    this.#open();
  }
}

/**
 * A model client around the scripted one that counts every dispatch and, for the calls a test
 * names, waits on a gate before its first event: the test can fence while the call is on the wire.
 * `arrived` resolves once `n` calls have started.
 */
export class GatedClient implements ModelClient {
  readonly id: string;
  readonly provider: string;
  readonly inner: FakeModelClient;
  readonly gates = new Map<number, Gate>();
  dispatched = 0;
  /** Dispatches seen after `markFenced()` (none: a fenced scope dispatches nothing). */
  afterFence = 0;
  #fenced = false;
  #waiters: { n: number; resolve: () => void }[] = [];

  constructor(script: readonly ScriptedResponse[]) {
    this.inner = new FakeModelClient(script);
    this.id = this.inner.id;
    this.provider = this.inner.provider;
  }

  markFenced(): void {
    this.#fenced = true;
  }

  arrived(n: number): Promise<void> {
    return new Promise((resolve) => {
      this.#waiters.push({ n, resolve });
      this.#wake();
    });
  }

  validate(request: ModelRequest): void {
    this.inner.validate(request);
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    const index = this.dispatched++;
    if (this.#fenced) this.afterFence += 1;
    this.#wake();
    const gate = this.gates.get(index);
    const inner = this.inner.stream(request, signal);
    return {
      [Symbol.asyncIterator]: () => {
        const it = inner[Symbol.asyncIterator]();
        let waited = gate === undefined;
        return {
          next: async () => {
            if (!waited) {
              waited = true;
              await gate?.opened;
            }
            return it.next();
          },
          return: async () => (it.return ? it.return() : { done: true, value: undefined }),
        };
      },
    };
  }

  #wake(): void {
    this.#waiters = this.#waiters.filter((w) => {
      if (this.dispatched < w.n) return true;
      w.resolve();
      return false;
    });
  }
}

export const FENCE_SCOPE = { org: "clinic-a", uid: "u1" } as const;
export const OTHER_UID = { org: "clinic-a", uid: "u2" } as const;

export const turnRequest = (
  key: string,
  sessionId = "s1",
  scope: { org: string; uid: string } = FENCE_SCOPE,
) => ({
  scope,
  sessionId,
  idempotencyKey: key,
  input: "When are you open on Monday?",
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

/** A runner over `stores` with a manual clock, the gated client and a tool whose handler may wait on a gate. */
export function fencedRunner(
  stores: ConversationStores,
  script: readonly ScriptedResponse[],
  toolGate?: Gate,
) {
  const model = new GatedClient(script);
  const clock = new ManualClock();
  const uncertain: UncertainTurnEvent[] = [];
  let toolRuns = 0;
  const toolStarted = new Gate();
  const hours = defineTool({
    name: "opening_hours",
    description: "Opening hours on a day.",
    input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
    handler: async (input) => {
      toolRuns += 1;
      toolStarted.open();
      await toolGate?.opened;
      return { day: input.day as string, open: "09:00-17:00" };
    },
  });
  const runner = createConversationRunner({
    ...clinicConfig(model, { tools: [hours], onUncertainTurn: (e) => uncertain.push(e) }),
    stores,
    clock,
    ids: new SequentialIds(),
  });
  return {
    runner,
    model,
    clock,
    uncertain,
    toolRuns: () => toolRuns,
    toolStarted: toolStarted.opened,
  };
}
