import {
  type ConversationStores,
  conversationRootKey,
  createConversationRunner,
} from "@alma-harness/conversation";
import {
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  MODEL_SPECIFICATION_VERSION,
} from "@alma-harness/core";
import { ManualClock, SequentialIds } from "@alma-harness/core/testing";
import { describe, expect, it } from "vitest";
import { clinicConfig, TURN_SCOPE } from "./open.js";
import { KINDS, openStores } from "./store-kit.js";

/** A model that answers once `open()` is called, and says when a call is waiting. */
class GatedModel implements ModelClient {
  readonly specificationVersion = MODEL_SPECIFICATION_VERSION;
  readonly id = "gated";
  readonly provider = "fake";
  calls = 0;
  #open!: () => void;
  readonly #gate = new Promise<void>((resolve) => {
    this.#open = resolve;
  });
  #entered!: () => void;
  readonly entered = new Promise<void>((resolve) => {
    this.#entered = resolve;
  });
  open(): void {
    this.#open();
  }
  validate(_request: ModelRequest): void {}
  async *stream(): AsyncIterable<ModelStreamEvent> {
    this.calls += 1;
    this.#entered();
    await this.#gate;
    const usage = { inputTokens: 10, outputTokens: 5 };
    yield { type: "text_delta", text: "We open at nine." };
    yield { type: "usage", evidence: { status: "known", usage } };
    yield {
      type: "response_completed",
      stopReason: "end_turn",
      text: "We open at nine.",
      toolCalls: [],
      usage,
    };
  }
}

/**
 * The duplicate's `admissions.holder` read is held until the first delivery has finished, so its
 * result read sees the root reserved and its holder read sees no holder: the race, made certain.
 */
function raced(
  stores: ConversationStores,
  first: () => Promise<unknown>,
): ConversationStores & { holderReads: number } {
  const out = { ...stores, holderReads: 0 };
  const admissions = stores.admissions;
  out.admissions = new Proxy(admissions, {
    get(target, prop) {
      const value = Reflect.get(target, prop);
      if (prop !== "holder") return typeof value === "function" ? value.bind(target) : value;
      return async (...args: Parameters<typeof admissions.holder>) => {
        out.holderReads += 1;
        await first();
        return target.holder(...args);
      };
    },
  });
  return out;
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `a duplicate delivery racing the first one's finish on ${kind}${enabled ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)"}`,
    () => {
      it("answers completed when its admission read lands just after the first delivery finished", async () => {
        const opened = await openStores(kind, "race");
        const model = new GatedModel();
        let firstView: Promise<unknown> = Promise.resolve();
        const finishFirst = () => {
          model.open();
          return firstView;
        };
        const stores = raced(opened.stores, finishFirst);
        const runner = createConversationRunner({
          ...clinicConfig(model),
          policy: {
            resolve: () => ({
              clientId: "gated",
              model: "demo",
              maxOutputTokens: 512,
              cache: false,
            }),
          },
          stores,
          clock: new ManualClock(),
          ids: new SequentialIds(),
        });
        const request = {
          scope: TURN_SCOPE,
          sessionId: "s1",
          idempotencyKey: "k1",
          input: "When are you open?",
          intent: { tier: "balanced" as const, sensitivity: "internal" as const },
        };
        try {
          const first = runner.runTurn(request);
          firstView = first;
          await model.entered;
          // The first delivery is inside its model call: its root is reserved and it holds the session.
          const duplicate = await runner.runTurn(request);
          const view = await first;
          expect(view.status).toBe("completed");
          expect(stores.holderReads).toBe(1);
          expect(duplicate).toEqual({ ...view, replayed: true });
          expect(model.calls).toBe(1);
          expect(
            (await runner.read(TURN_SCOPE, conversationRootKey(TURN_SCOPE, "s1", "k1")))?.status,
          ).toBe("completed");
        } finally {
          await opened.close();
        }
      });
    },
  );
}
