import {
  type Clock,
  defineTool,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type Usage,
  utcDay,
} from "@alma-harness/core";
import type { Runtime, RuntimeConfig } from "@alma-harness/runtime";
import { describe, expect, it } from "vitest";
import { clinicConfig, compositions, skipNote } from "./open.js";

/**
 * The promises of the governed call under concurrency, on every store (spec: caps under
 * concurrency, claims fenced by the admission). Each call costs 6,600 micro-dollars (200 input
 * tokens at $3/Mtok, 400 output at $15/Mtok) against a worst case of about 9,000 (512 output
 * tokens and one token per byte of the request): before reservations, 20 concurrent turns under a
 * $0.03 tenant-day cap let all 20 through.
 */
const USAGE: Usage = { inputTokens: 200, outputTokens: 400 };
const CALL = 6_600;

/** Answers after yielding to the event loop twice, so concurrent turns are all in flight at once. */
class PacedModel implements ModelClient {
  readonly id = "paced";
  readonly provider = "test";
  calls = 0;
  validate(): void {}
  async *stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    this.calls += 1;
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const text =
      request.tools.length > 0 &&
      !request.messages.some((m) => m.blocks.some((b) => b.type === "tool_result"))
        ? undefined
        : "done";
    if (text === undefined) {
      const calls = Array.from({ length: 5 }, (_, i) => ({
        id: `call-${i}`,
        name: "ask",
        arguments: "{}",
      }));
      for (const c of calls) yield { type: "tool_call", ...c };
      yield { type: "usage", evidence: { status: "known", usage: USAGE } };
      yield {
        type: "response_completed",
        stopReason: "tool_use",
        text: "",
        toolCalls: calls,
        usage: USAGE,
      };
      return;
    }
    yield { type: "text_delta", text };
    yield { type: "usage", evidence: { status: "known", usage: USAGE } };
    yield { type: "response_completed", stopReason: "end_turn", text, toolCalls: [], usage: USAGE };
  }
}

function config(model: ModelClient, over: Partial<RuntimeConfig> = {}): RuntimeConfig {
  return clinicConfig(model, { maxCalls: 8, ...over });
}

const ORG = "clinic-a";
const turn = (i: number, sessionId = `s${i}`, key = `k${i}`) => ({
  scope: { org: ORG, uid: `p${i}` },
  sessionId,
  idempotencyKey: key,
  input: "When are you open on Monday?",
  intent: { tier: "balanced" as const, sensitivity: "internal" as const },
});

const COMPOSITIONS = compositions("caps");

async function tenantDaySpend(rt: Runtime): Promise<number> {
  const days = await rt.stores.spend.tenantDays(ORG);
  return days.reduce((sum, d) => sum + d.usdMicros, 0);
}

for (const [name, open, enabled] of COMPOSITIONS) {
  describe.skipIf(!enabled)(
    `block caps and fences under concurrency on ${name}${skipNote(enabled)}`,
    () => {
      it("20 concurrent turns of one tenant under a block tenant-day cap never commit spend over it", async () => {
        const model = new PacedModel();
        const cap = 30_000;
        const rt = await open(
          config(model, { caps: { perTenantDayUsd: { usd: cap / 1e6, onExceeded: "block" } } }),
        );
        try {
          const views = await Promise.all(
            Array.from({ length: 20 }, (_, i) => rt.runner.runTurn(turn(i))),
          );
          const spent = await tenantDaySpend(rt);
          expect(spent).toBeLessThanOrEqual(cap);
          expect(spent).toBe(model.calls * CALL);
          const answered = views.filter(
            (v) => v.status === "completed" && v.result.terminalReason === "answered",
          );
          const stopped = views.filter(
            (v) => v.status === "completed" && v.result.budget?.metric === "perTenantDayUsd",
          );
          expect(answered.length).toBe(model.calls);
          expect(answered.length).toBeGreaterThan(0);
          expect(answered.length + stopped.length).toBe(20);
        } finally {
          await rt.close();
        }
      });

      it("5 parallel children under a block per-turn cap never settle more than it", async () => {
        const model = new PacedModel();
        const ask = defineTool({
          name: "ask",
          description: "Asks a colleague.",
          input: { type: "object", properties: {} },
          handler: async (_input, ctx) => {
            try {
              return (
                await ctx.models.direct({
                  tier: "fast",
                  sensitivity: "internal",
                  prompt: "What is the answer?",
                })
              ).text;
            } catch {
              return "no budget";
            }
          },
        });
        const cap = 40_000;
        const rt = await open(
          config(model, {
            tools: [ask],
            caps: { perTurnUsd: cap / 1e6 },
            limits: { maxParallelToolCalls: 5 },
          }),
        );
        try {
          const view = await rt.runner.runTurn(turn(1));
          expect(view.status).toBe("completed");
          if (view.status !== "completed") return;
          expect(view.result.costMicros).toBeLessThanOrEqual(cap);
          const children = view.result.receipts?.filter((r) => r.kind === "direct") ?? [];
          expect(children.length).toBeGreaterThan(0);
          expect(children.length).toBeLessThan(5);
        } finally {
          await rt.close();
        }
      });

      it("a session cap is never passed by a call that started under it, turns one after another", async () => {
        const model = new PacedModel();
        const cap = 20_000;
        const rt = await open(
          config(model, { caps: { perSessionUsd: { usd: cap / 1e6, onExceeded: "block" } } }),
        );
        try {
          const views = [];
          for (let i = 0; i < 6; i++) views.push(await rt.runner.runTurn(turn(0, "s1", `k${i}`)));
          const spent = (await rt.stores.spend.peek(turn(0).scope, "s1", utcDay(Date.now())))
            .sessionMicros;
          expect(spent).toBeLessThanOrEqual(cap);
          expect(spent).toBe(model.calls * CALL);
          expect(
            views.filter(
              (v) => v.status === "completed" && v.result.budget?.metric === "perSessionUsd",
            ).length,
          ).toBe(6 - model.calls);
          expect(model.calls).toBeGreaterThan(0);
        } finally {
          await rt.close();
        }
      });

      it("a stale worker, its admission taken over after the deadline, claims nothing, dispatches nothing and stores no result", async () => {
        let now = Date.UTC(2026, 11, 1, 9);
        // A paused process: time passes, its timers do not fire.
        const paused: Clock = {
          now: () => now,
          sleep: (_ms, signal) =>
            new Promise((_, reject) =>
              signal?.addEventListener("abort", () => reject(signal.reason), { once: true }),
            ),
        };
        let resume: () => void = () => undefined;
        const gate = new Promise<void>((resolve) => {
          resume = resolve;
        });
        let entered: () => void = () => undefined;
        const inHandler = new Promise<void>((resolve) => {
          entered = resolve;
        });
        const pause = defineTool({
          name: "ask",
          description: "Looks something up, slowly.",
          input: { type: "object", properties: {} },
          handler: async (_input, ctx) => {
            if (!pausing) return "nothing to look up";
            entered();
            await gate;
            // Resumed after the takeover: the child call's claim is fenced by the released admission.
            return (
              await ctx.models.direct({
                tier: "fast",
                sensitivity: "internal",
                prompt: "Anything else?",
              })
            ).text;
          },
        });
        let pausing = true;
        const uncertain: string[] = [];
        const model = new PacedModel();
        const rt = await open(
          config(model, {
            tools: [pause],
            clock: paused,
            onUncertainTurn: (e) => uncertain.push(e.cause),
          }),
        );
        try {
          const stale = rt.runner.runTurn(turn(1));
          await inHandler;
          expect(model.calls).toBe(1);
          // Past the deadline and its grace; maintenance (another process) releases the session, a new turn takes it.
          now += 120_000 + 15 * 60_000 + 1;
          expect((await rt.maintain()).released).toHaveLength(1);
          pausing = false;
          const fresh = await rt.runner.runTurn(turn(1, "s1", "k-new"));
          expect(fresh.status).toBe("completed");
          const callsBefore = model.calls;
          resume();
          const view = await stale;
          expect(view.status).toBe("reconciliation_required");
          if (view.status !== "reconciliation_required") return;
          expect(model.calls).toBe(callsBefore);
          // Maintenance reported the turn it freed; the stale invocation reports its own fenced ending.
          expect(uncertain).toEqual(["expired", "admission_fenced"]);
          const again = await rt.runner.read(turn(1).scope, view.rootKey);
          expect(again?.status).toBe("reconciliation_required");
        } finally {
          await rt.close();
        }
      });
    },
  );
}
