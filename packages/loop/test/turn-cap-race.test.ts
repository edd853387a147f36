import {
  type BudgetCapsInput,
  type ModelPrice,
  type ModelRequest,
  type PriceTable,
  worstCaseMicros,
} from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { completed, deferred, harness, PRICES, SMALL_CHOICE, tool, until } from "./harness.js";

// A main model at a cent per Mtok: its calls are all but free, the children's are not.
const prices: PriceTable = {
  version: "v",
  models: {
    "fake-main": { rates: { input: 0.01, output: 0.01 } },
    "fake-small": PRICES.models["fake-small"] as ModelPrice,
  },
};
const worstOf = (request: ModelRequest) => worstCaseMicros(prices, SMALL_CHOICE, request) ?? 0;
/** The worst case of each child `ctx.models.direct({prompt: "q"})` asks for. */
const CHILD = worstOf({
  model: "fake-small",
  system: [],
  messages: [{ role: "user", blocks: [{ type: "text", text: "q" }] }],
  tools: [],
  maxOutputTokens: SMALL_CHOICE.maxOutputTokens,
});
/** Room for one child's worst case in flight, not two. */
const ONE = Math.floor(1.5 * CHILD) / 1e6;
const BLOCK = { usd: 1, onExceeded: "block" } as const;

/**
 * A turn whose one step calls `ask` three times in parallel; each handler waits until all three
 * have started, then asks a child `direct` call. Once the children go, every spend read waits
 * until each child is reading spend, refused or sent: what the scripted small model was asked,
 * the refusals the handlers caught, and the turn's result.
 */
async function threeChildren(caps: BudgetCapsInput) {
  const started = deferred();
  const reads = deferred();
  let waiting = 0;
  // -1: spend reads pass; from 0 on, each waits for `reads` and is counted.
  let reading = -1;
  const refusals: string[] = [];
  const ask = tool("ask", async (_i, ctx) => {
    waiting += 1;
    await started.promise;
    try {
      return (await ctx.models.direct({ tier: "fast", sensitivity: "internal", prompt: "q" })).text;
    } catch (error) {
      refusals.push((error as { code: string }).code);
      return "no budget";
    }
  });
  const h = harness({
    tools: [ask],
    prices,
    caps,
    limits: { maxParallelToolCalls: 3 },
    spendRead: (spend) => ({
      peek: async (...args) => {
        if (reading >= 0) {
          reading += 1;
          await reads.promise;
        }
        return spend.peek(...args);
      },
      tenantDays: (...args) => spend.tenantDays(...args),
    }),
    script: [
      scriptedToolCall(["c1", "c2", "c3"].map((id) => ({ id, name: "ask" }))),
      scriptedText("ok"),
    ],
    smallScript: [scriptedText("a"), scriptedText("b"), scriptedText("c")],
  });
  const turn = h.run();
  await until(() => waiting === 3, "every handler started");
  reading = 0;
  started.resolve();
  const arrived = () => reading + refusals.length + h.small.calls;
  await until(() => arrived() === 3, "each child reading spend, refused or sent");
  reads.resolve();
  const result = completed(await turn);
  const records = await h.journal.list(h.input().scope, { resolved: true });
  const claimed = records.items.filter((r) => r.kind === "direct").length;
  return { h, refusals, result, claimed };
}

describe("parallel children of one turn under a per-turn block cap", () => {
  const cases: readonly [string, BudgetCapsInput][] = [
    ["no session or tenant-day cap", { perTurnUsd: ONE }],
    ["a session warn cap", { perTurnUsd: ONE, perSessionUsd: 1 }],
    ["a session block cap", { perTurnUsd: ONE, perSessionUsd: BLOCK }],
    ["a tenant-day block cap", { perTurnUsd: ONE, perTenantDayUsd: BLOCK }],
  ];
  for (const [name, caps] of cases) {
    it(`with ${name}: one child is claimed and sent, the others get CallRefusedError at zero cost`, async () => {
      const { h, refusals, result, claimed } = await threeChildren(caps);
      // The premise: each child's worst case is the one the cap was cut for.
      expect(h.small.requests.map(worstOf)).toEqual([CHILD]);
      expect(h.small.calls).toBe(1);
      expect(claimed).toBe(1);
      expect(refusals).toEqual(["call_refused_cap", "call_refused_cap"]);
      expect(result.receipts.filter((r) => r.kind === "direct")).toHaveLength(1);
      expect(
        h
          .trail("cost")
          .filter((e) => e.refused)
          .map((e) => [e.usdMicros, e.refused?.detail]),
      ).toEqual([
        [0, "perTurnUsd"],
        [0, "perTurnUsd"],
      ]);
      expect(result.terminalReason).toBe("answered");
    });
  }
});
