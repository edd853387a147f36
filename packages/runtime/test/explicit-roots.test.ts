import {
  ConversationConflictError,
  type ConversationRootDescriptor,
  type ConversationRunner,
  conversationRootKey,
  createConversationDescriptor,
  createConversationRunner,
  type UncertainTurnEvent,
} from "@alma-harness/conversation";
import { ManualClock, SequentialIds } from "@alma-harness/core/testing";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { clinicConfig, TURN_SCOPE } from "./open.js";
import { KINDS, type OpenedStores, openStores } from "./store-kit.js";

const INTENT = { tier: "balanced", sensitivity: "internal" } as const;

interface Kit {
  readonly runner: ConversationRunner;
  readonly opened: OpenedStores;
  readonly model: FakeModelClient;
  readonly clock: ManualClock;
  readonly uncertain: UncertainTurnEvent[];
  readonly config: ReturnType<typeof clinicConfig>;
}

async function open(kind: (typeof KINDS)[number][0], script: string[]): Promise<Kit> {
  const opened = await openStores(kind, "roots");
  const model = new FakeModelClient(script.map((text) => scriptedText(text)));
  const clock = new ManualClock();
  const uncertain: UncertainTurnEvent[] = [];
  const config = clinicConfig(model);
  const runner = createConversationRunner({
    ...config,
    stores: opened.stores,
    clock,
    ids: new SequentialIds(),
    onUncertainTurn: (e) => uncertain.push(e),
  });
  return { runner, opened, model, clock, uncertain, config };
}

const simple = (key: string, input = "When are you open?") => ({
  scope: TURN_SCOPE,
  sessionId: "s1",
  idempotencyKey: key,
  input,
  intent: INTENT,
});

function hostRoot(k: Kit, rootId: string, deadlineAt: number): ConversationRootDescriptor {
  return {
    version: 1,
    scope: TURN_SCOPE,
    sessionId: "s1",
    rootId,
    inputRevision: `${rootId}-rev`,
    configRevision: k.config.configRevision,
    resultContractVersion: 1,
    resultRetentionMs: k.config.resultRetentionMs,
    caps: {},
    maxCalls: k.config.maxCalls,
    sensitivity: "internal",
    deadlineAt,
  };
}

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `explicit roots on ${kind}${enabled ? "" : " (skipped: ALMA_TEST_DATABASE_URL is not set)"}`,
    () => {
      it("a simple request and the helper's descriptor for it are one root: either replays the other, whatever the proposed deadline", async () => {
        const k = await open(kind, ["first", "second"]);
        let loads = 0;
        const loadInput = () => {
          loads += 1;
          return "When are you open?";
        };
        try {
          const a = await k.runner.runTurn(simple("k1"));
          const later = createConversationDescriptor(k.config, simple("k1"), k.clock.now() + 9_000);
          expect(await k.runner.runTurn({ root: later, intent: INTENT, loadInput })).toEqual({
            ...a,
            replayed: true,
          });
          const root = createConversationDescriptor(k.config, simple("k2"), k.clock.now() + 60_000);
          const b = await k.runner.runTurn({ root, intent: INTENT, loadInput });
          expect(b.status === "completed" && b.rootKey).toBe(
            conversationRootKey(TURN_SCOPE, "s1", "k2"),
          );
          k.clock.advance(5_000);
          expect(await k.runner.runTurn(simple("k2"))).toEqual({ ...b, replayed: true });
          await expect(k.runner.runTurn(simple("k2", "Other words"))).rejects.toBeInstanceOf(
            ConversationConflictError,
          );
          expect({ loads, calls: k.model.calls }).toEqual({ loads: 1, calls: 2 });
        } finally {
          await k.opened.close();
        }
      });

      it("an arbitrary root: the host's id is the turn id, a replay loads nothing, another deadline conflicts", async () => {
        const k = await open(kind, ["answer"]);
        let loads = 0;
        const loadInput = () => {
          loads += 1;
          return "When are you open?";
        };
        try {
          const root = hostRoot(k, "visit-1", k.clock.now() + 60_000);
          const view = await k.runner.runTurn({ root, intent: INTENT, loadInput });
          expect(view.status === "completed" && view.result.turnId).toBe("visit-1");
          const stored = await k.opened.stores.sessions.load(TURN_SCOPE, "s1");
          expect(stored.messages.map((m) => m.meta?.turn)).toEqual(["visit-1", "visit-1"]);
          expect(await k.runner.runTurn({ root, intent: INTENT, loadInput })).toEqual({
            ...view,
            replayed: true,
          });
          const moved = { ...root, deadlineAt: root.deadlineAt + 1 };
          await expect(
            k.runner.runTurn({ root: moved, intent: INTENT, loadInput }),
          ).rejects.toBeInstanceOf(ConversationConflictError);
          expect({ loads, calls: k.model.calls }).toEqual({ loads: 1, calls: 1 });
        } finally {
          await k.opened.close();
        }
      });

      it("a busy session never calls loadInput; a loadInput that throws ends uncertain (input) with the session released", async () => {
        const k = await open(kind, ["after"]);
        let release!: (v: unknown) => void;
        let entered!: () => void;
        const inside = new Promise<void>((r) => {
          entered = r;
        });
        let loads = 0;
        try {
          const deadline = k.clock.now() + 60_000;
          const first = k.runner.runTurn({
            root: hostRoot(k, "visit-1", deadline),
            intent: INTENT,
            loadInput: () => {
              entered();
              return new Promise((_, reject) => {
                release = reject;
              });
            },
          });
          await inside;
          const busy = await k.runner.runTurn({
            root: hostRoot(k, "visit-2", deadline),
            intent: INTENT,
            loadInput: () => {
              loads += 1;
              return "never";
            },
          });
          expect(busy).toEqual({ status: "busy", rootKey: "visit-2", holder: "visit-1" });
          release(new Error("the content store is down"));
          expect(await first).toEqual({ status: "reconciliation_required", rootKey: "visit-1" });
          expect(k.uncertain.map((u) => [u.rootKey, u.cause, u.persisted, u.released])).toEqual([
            ["visit-1", "input", false, true],
          ]);
          expect(await k.runner.read(TURN_SCOPE, "visit-1")).toEqual({
            status: "reconciliation_required",
            rootKey: "visit-1",
          });
          const next = await k.runner.runTurn({
            root: hostRoot(k, "visit-2", deadline),
            intent: INTENT,
            loadInput: () => {
              loads += 1;
              return "When are you open?";
            },
          });
          expect(next.status).toBe("completed");
          expect({ loads, calls: k.model.calls }).toEqual({ loads: 1, calls: 1 });
        } finally {
          await k.opened.close();
        }
      });
    },
  );
}
