import {
  ConversationConfigError,
  conversationRootKey,
  createConversationRunner,
} from "@alma-harness/conversation";
import { defineTool, ProviderError, type RoutingIntent } from "@alma-harness/core";
import {
  FakeModelClient,
  scriptedError,
  scriptedHang,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { clinicConfig, skipNote } from "./open.js";
import {
  advanceWhenArmed,
  CHOICE,
  completed,
  failOnce,
  openRetry,
  rateLimited,
  request,
  type Setup,
  SCOPE,
  unavailable,
} from "./retry-kit.js";
import { KINDS, openStores } from "./store-kit.js";

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `failed calls tried again on ${kind}${skipNote(enabled)} (spec: call-retry)`,
    () => {
      const open = (s: Setup) => openRetry(kind, s);

      it("a provider failure is tried again as a new call under the same root; the result lists the failure and the unsettled call", async () => {
        const model = new FakeModelClient([scriptedError(unavailable()), scriptedText("9 to 5.")]);
        const t = await open({ model, attempts: 2 });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(result.reply).toEqual([{ type: "text", text: "9 to 5." }]);
          expect(result.terminalReason).toBe("answered");
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:server:none" }]);
          expect(result.unsettledCalls).toBe(1);
          expect(result.receipts.map((r) => r.operationId)).toEqual([
            `${conversationRootKey(SCOPE, "s1", "k1")}:main:2`,
          ]);
          const root = conversationRootKey(SCOPE, "s1", "k1");
          expect((await t.stores.journal.get(SCOPE, `${root}:main:1`))?.state).toBe("received");
          expect((await t.stores.journal.get(SCOPE, `${root}:main:2`))?.state).toBe("completed");
          expect(model.calls).toBe(2);
        } finally {
          await t.close();
        }
      });

      it("out of attempts: completed unanswered with the last cause, an empty reply, stopReason null; the key replays it", async () => {
        const model = new FakeModelClient([
          scriptedError(unavailable()),
          scriptedError(unavailable()),
        ]);
        const t = await open({ model, attempts: 2 });
        try {
          const view = await t.runner.runTurn(request("k1"));
          const result = completed(view);
          expect(result).toMatchObject({
            terminalReason: "unanswered",
            unanswered: { cause: "call:main:server:none" },
            reply: [],
            stopReason: null,
            unsettledCalls: 2,
          });
          expect(result.failures).toHaveLength(2);
          expect(await t.runner.runTurn(request("k1"))).toEqual({ ...view, replayed: true });
          expect(model.calls).toBe(2);
          expect(t.uncertain).toEqual([]);
        } finally {
          await t.close();
        }
      });

      it("callAttempts 1: one call, then unanswered; 5: five calls; an attempt that would exceed maxCalls is not made", async () => {
        const one = await open({
          model: new FakeModelClient([scriptedError(unavailable())]),
          attempts: 1,
        });
        try {
          expect(completed(await one.runner.runTurn(request("k1"))).unanswered).toEqual({
            cause: "call:main:server:none",
          });
        } finally {
          await one.close();
        }
        const fiveModel = new FakeModelClient(
          Array.from({ length: 5 }, () => scriptedError(unavailable())),
        );
        const five = await open({ model: fiveModel, attempts: 5 });
        try {
          expect(completed(await five.runner.runTurn(request("k1"))).failures).toHaveLength(5);
          expect(fiveModel.calls).toBe(5);
        } finally {
          await five.close();
        }
        const capped = new FakeModelClient(
          Array.from({ length: 3 }, () => scriptedError(unavailable())),
        );
        const three = await open({ model: capped, attempts: 5, over: { maxCalls: 3 } });
        try {
          const result = completed(await three.runner.runTurn(request("k1")));
          expect(result.terminalReason).toBe("unanswered");
          expect(result.failures).toHaveLength(3);
          expect(capped.calls).toBe(3);
        } finally {
          await three.close();
        }
      });

      it("the retry asks the policy again with attempt and previousCause; lower reasoning is honored and step:pre runs again", async () => {
        const asked: RoutingIntent[] = [];
        const pre: number[] = [];
        const model = new FakeModelClient([scriptedError(unavailable()), scriptedText("ok")]);
        const t = await open({
          model,
          attempts: 2,
          over: {
            policy: {
              resolve: (intent) => {
                asked.push(intent);
                return { ...CHOICE, reasoning: intent.attempt ? "low" : "high" };
              },
            },
            hooks: { "step:pre": (ctx) => void pre.push(ctx.step) },
          },
        });
        try {
          completed(await t.runner.runTurn(request("k1")));
          expect(asked[1]).toEqual({
            tier: "balanced",
            sensitivity: "internal",
            attempt: 2,
            previousCause: "call:main:server:none",
          });
          expect(model.requests.map((r) => r.reasoning)).toEqual(["high", "low"]);
          expect(pre).toEqual([1, 1]);
        } finally {
          await t.close();
        }
      });

      it("a retry route that changes the model, or a policy that throws, ends the call with routing_unavailable", async () => {
        for (const resolve of [
          (i: RoutingIntent) => ({ ...CHOICE, model: i.attempt ? "other" : "demo" }),
          (i: RoutingIntent) => {
            if (i.attempt) throw new Error("no route");
            return CHOICE;
          },
          (i: RoutingIntent) => ({
            ...CHOICE,
            ...(i.attempt ? { reasoning: "high" as const } : {}),
          }),
        ]) {
          const model = new FakeModelClient([scriptedError(unavailable())]);
          const t = await open({ model, attempts: 3, over: { policy: { resolve } } });
          try {
            const result = completed(await t.runner.runTurn(request("k1")));
            expect(result.unanswered).toEqual({ cause: "call:main:routing_unavailable" });
            expect(result.failures).toEqual([{ kind: "main", cause: "call:main:server:none" }]);
            expect(model.calls).toBe(1);
          } finally {
            await t.close();
          }
        }
      });

      it("a refused request ends the call without another attempt: request_invalid, nothing sent", async () => {
        const model = new FakeModelClient([], {
          validate: () => {
            throw new ProviderError("too large", { kind: "invalid_request", provider: "fake" });
          },
        });
        const t = await open({ model, attempts: 3 });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(result.unanswered).toEqual({ cause: "call:main:request_invalid" });
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:request_invalid" }]);
          expect(model.calls).toBe(0);
        } finally {
          await t.close();
        }
      });

      it("an unreleased pre-stream refusal is tried again (each attempt settled and paid)", async () => {
        const model = new FakeModelClient([scriptedError(rateLimited()), scriptedText("ok")], {
          provider: "anthropic",
        });
        const t = await open({ model, attempts: 2 });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(result.failures).toEqual([
            { kind: "main", cause: "call:main:rejected:anthropic_rate_limit_v1" },
          ]);
          expect(result.receipts.map((r) => r.usdMicros > 0)).toEqual([false, true]);
          expect(result.unsettledCalls).toBeUndefined();
        } finally {
          await t.close();
        }
      });

      it("a store failure before the provider is tried again only when the journal proves it was never sent", async () => {
        // The dispatch write failed before its effect: the record is cancelled `not_dispatched` and the next attempt goes.
        const sent = await open({
          model: new FakeModelClient([scriptedText("ok")]),
          attempts: 2,
          wrap: (s) => ({ ...s, journal: failOnce(s.journal, "dispatch", "before") }),
        });
        try {
          const result = completed(await sent.runner.runTurn(request("k1")));
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:error" }]);
          const root = conversationRootKey(SCOPE, "s1", "k1");
          expect(await sent.stores.journal.get(SCOPE, `${root}:main:1`)).toMatchObject({
            state: "not_dispatched",
            notDispatchedCause: "store",
          });
          // Cancelled as not dispatched, its reservation went with it: nothing is left unsettled.
          expect(result.unsettledCalls).toBeUndefined();
        } finally {
          await sent.close();
        }
        // The claim failed before its effect: no record, tried again.
        const claim = await open({
          model: new FakeModelClient([scriptedText("ok")]),
          attempts: 2,
          wrap: (s) => ({ ...s, journal: failOnce(s.journal, "claim", "before") }),
        });
        try {
          const result = completed(await claim.runner.runTurn(request("k1")));
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:error" }]);
          expect(result.unsettledCalls).toBeUndefined();
        } finally {
          await claim.close();
        }
        // The claim landed, then reported a failure: its record is cancelled not dispatched (its reservation with it), tried again.
        const lost = await open({
          model: new FakeModelClient([scriptedText("ok")]),
          attempts: 2,
          wrap: (s) => ({ ...s, journal: failOnce(s.journal, "claim", "after") }),
        });
        try {
          const result = completed(await lost.runner.runTurn(request("k1")));
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:error" }]);
          expect(result.unsettledCalls).toBeUndefined();
          const root = conversationRootKey(SCOPE, "s1", "k1");
          expect(await lost.stores.journal.get(SCOPE, `${root}:main:1`)).toMatchObject({
            state: "not_dispatched",
            notDispatchedCause: "store",
          });
        } finally {
          await lost.close();
        }
        // The dispatch write landed, then reported a failure: the journal cannot prove it unsent.
        const unknown = await open({
          model: new FakeModelClient([scriptedText("ok")]),
          attempts: 3,
          wrap: (s) => ({ ...s, journal: failOnce(s.journal, "dispatch", "after") }),
        });
        try {
          expect((await unknown.runner.runTurn(request("k1"))).status).toBe(
            "reconciliation_required",
          );
          expect(unknown.uncertain.map((e) => e.cause)).toEqual(["call:main:error"]);
        } finally {
          await unknown.close();
        }
      });

      it("a fault at the store calls of a retry: the retry's claim fails, the journal proves it unsent, the third attempt answers", async () => {
        const model = new FakeModelClient([scriptedError(unavailable()), scriptedText("ok")]);
        const t = await open({
          model,
          attempts: 3,
          wrap: (s) => ({ ...s, journal: failOnce(s.journal, "claim", "before", 1) }),
        });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(result.reply).toEqual([{ type: "text", text: "ok" }]);
          expect(result.failures?.map((f) => f.cause)).toEqual([
            "call:main:server:none",
            "call:main:error",
          ]);
          expect(model.calls).toBe(2);
        } finally {
          await t.close();
        }
      });

      it("a call its round timed out is tried again (call:main:aborted)", async () => {
        const model = new FakeModelClient([scriptedHang(), scriptedText("ok")]);
        const t = await open({ model, attempts: 2, over: { limits: { roundTimeoutMs: 10_000 } } });
        try {
          const pending = t.runner.runTurn(request("k1"));
          await advanceWhenArmed(t.clock, 10_000, 2);
          const result = completed(await pending);
          expect(result.failures).toEqual([{ kind: "main", cause: "call:main:aborted" }]);
          expect(result.unsettledCalls).toBe(1);
        } finally {
          await t.close();
        }
      });

      it("a delegate retried once answers its handler; the stream's result is the same completed view with its failures", async () => {
        const seen: string[] = [];
        const ask = defineTool({
          name: "ask_colleague",
          description: "Delegates a question.",
          input: { type: "object", properties: {} },
          handler: async (_input, ctx) => {
            const { text } = await ctx.models.delegate({
              tier: "fast",
              sensitivity: "internal",
              prompt: "q",
            });
            seen.push(text);
            return { text };
          },
        });
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "ask_colleague", input: {} }),
          scriptedError(unavailable()),
          scriptedText("Mondays."),
          scriptedText("done"),
        ]);
        const t = await open({ model, attempts: 2, over: { tools: [ask] } });
        try {
          const stream = t.runner.streamTurn(request("k1"));
          const types: string[] = [];
          for await (const event of stream) types.push(event.type);
          const result = completed(await stream.result);
          expect(seen).toEqual(["Mondays."]);
          expect(result.failures).toEqual([
            { kind: "delegate", cause: "call:delegate:server:none" },
          ]);
          expect(types.at(-1)).toBe("result");
          expect(await t.runner.read(SCOPE, conversationRootKey(SCOPE, "s1", "k1"))).toMatchObject({
            status: "completed",
            result: { failures: result.failures },
          });
        } finally {
          await t.close();
        }
      });

      it("a direct child out of attempts hands its handler empty text; the turn answers", async () => {
        const seen: string[] = [];
        const research = defineTool({
          name: "research",
          description: "Asks a small model.",
          input: { type: "object", properties: {} },
          handler: async (_input, ctx) => {
            const { text } = await ctx.models.direct({
              tier: "fast",
              sensitivity: "internal",
              prompt: "q",
            });
            seen.push(text);
            return { text };
          },
        });
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "research", input: {} }),
          scriptedError(unavailable()),
          scriptedError(unavailable()),
          scriptedText("done"),
        ]);
        const asked: RoutingIntent[] = [];
        const t = await open({
          model,
          attempts: 2,
          over: {
            tools: [research],
            policy: {
              resolve: (i) => {
                asked.push(i);
                return CHOICE;
              },
            },
          },
        });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(seen).toEqual([""]);
          expect(asked.filter((i) => i.task === "direct").map((i) => i.attempt)).toEqual([
            undefined,
            2,
          ]);
          expect(result.reply).toEqual([{ type: "text", text: "done" }]);
          expect(result.failures).toEqual([
            { kind: "direct", cause: "call:direct:server:none" },
            { kind: "direct", cause: "call:direct:server:none" },
          ]);
        } finally {
          await t.close();
        }
      });
    },
  );
}

describe("callAttempts is checked when the runner is built", () => {
  it("0 and 6 are configuration errors; 1 and 5 build", async () => {
    const opened = await openStores("memory", "retry-cfg");
    const model = new FakeModelClient([]);
    for (const bad of [0, 6, 1.5])
      expect(() =>
        createConversationRunner({
          ...clinicConfig(model),
          callAttempts: bad,
          stores: opened.stores,
        }),
      ).toThrow(ConversationConfigError);
    for (const ok of [1, 5])
      expect(() =>
        createConversationRunner({
          ...clinicConfig(model),
          callAttempts: ok,
          stores: opened.stores,
        }),
      ).not.toThrow();
  });
});
