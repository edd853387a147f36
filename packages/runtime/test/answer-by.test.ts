import { type ConversationConfig, createConversationRunner } from "@alma-harness/conversation";
import { defineTool } from "@alma-harness/core";
import { ManualClock } from "@alma-harness/core/testing";
import {
  FakeModelClient,
  scriptedHang,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { afterAll, describe, expect, it } from "vitest";
import { clinicConfig, skipNote } from "./open.js";
import { advanceWhenArmed, completed, request } from "./retry-kit.js";
import { KINDS, openStores } from "./store-kit.js";

for (const [kind, enabled] of KINDS)
  describe.skipIf(!enabled)(
    `the answer-by time on ${kind}${skipNote(enabled)} (spec: call-retry)`,
    () => {
      // runTimeoutMs 120 s: calls end min(15 s, 30 s) = 15 s before the deadline, at 105 s.
      const ANSWER_BY = 105_000;
      const closers: (() => Promise<void>)[] = [];
      afterAll(async () => {
        for (const close of closers) await close();
      });

      async function open(model: FakeModelClient, over: Partial<ConversationConfig> = {}) {
        const opened = await openStores(kind, "retry_time");
        closers.push(opened.close);
        const clock = new ManualClock();
        const runner = createConversationRunner({
          ...clinicConfig(model),
          callAttempts: 3,
          clock,
          ...over,
          stores: opened.stores,
        });
        return { runner, clock };
      }

      it("a call still streaming at the answer-by time is cut there (call:main:deadline) and, no time left, the turn is unanswered", async () => {
        const model = new FakeModelClient([scriptedHang()]);
        const t = await open(model, { limits: { roundTimeoutMs: 600_000 } });
        let settled = false;
        const pending = t.runner.runTurn(request("k1")).finally(() => {
          settled = true;
        });
        // The call is streaming (dispatched, its round timer armed beside the turn's deadline).
        for (let i = 0; i < 10_000 && model.calls === 0; i++)
          await new Promise((r) => setImmediate(r));
        await advanceWhenArmed(t.clock, ANSWER_BY - 1, 2);
        // One millisecond before the edge the call still runs.
        for (let i = 0; i < 200; i++) await new Promise((r) => setImmediate(r));
        expect(settled).toBe(false);
        t.clock.advance(1);
        const result = completed(await pending);
        expect(result).toMatchObject({
          terminalReason: "unanswered",
          unanswered: { cause: "call:main:deadline" },
          reply: [],
          stopReason: null,
        });
        expect(model.calls).toBe(1);
      });

      const hoursAfter = (clock: () => ManualClock, ms: number) =>
        defineTool({
          name: "opening_hours",
          description: "Opening hours.",
          input: { type: "object", properties: {} },
          handler: () => {
            clock().advance(ms);
            return { open: "09:00-17:00" };
          },
        });

      it("at the final-answer edge the next step is the last: timeLimit answered, with finalAnswerNotice's text", async () => {
        let clock!: ManualClock;
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }),
          scriptedText("9 to 5."),
        ]);
        // roundTimeoutMs 30 s: from 75 s on, less than one round is left before 105 s.
        const t = await open(model, {
          tools: [hoursAfter(() => clock, ANSWER_BY - 30_000)],
          limits: { roundTimeoutMs: 30_000, finalAnswerNotice: "Answer now, please." },
        });
        clock = t.clock;
        const result = completed(await t.runner.runTurn(request("k1")));
        expect(result.timeLimit).toEqual({ answered: true });
        expect(JSON.stringify(model.requests[1]?.messages)).toContain("Answer now, please.");
      });

      it("one millisecond before that edge the step is not the last", async () => {
        let clock!: ManualClock;
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "opening_hours", input: {} }),
          scriptedText("9 to 5."),
        ]);
        const t = await open(model, {
          tools: [hoursAfter(() => clock, ANSWER_BY - 30_000 - 1)],
          limits: { roundTimeoutMs: 30_000, finalAnswerNotice: "Answer now, please." },
        });
        clock = t.clock;
        const result = completed(await t.runner.runTurn(request("k1")));
        expect(result.timeLimit).toBeUndefined();
        expect(result.terminalReason).toBe("answered");
        expect(JSON.stringify(model.requests[1]?.messages)).not.toContain("Answer now, please.");
      });
    },
  );
