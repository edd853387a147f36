import type { ModelChoice, PriceTable, Usage } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { CHOICE, identity, REQUEST, SCOPE, setup } from "./fixtures.js";

const BATCH_PRICES: PriceTable = {
  version: "p-b",
  models: { m: { rates: { input: 3, output: 15 }, tiers: { batch: { input: 1.5, output: 7.5 } } } },
};
const BATCH: ModelChoice = { ...CHOICE, serviceTier: "batch" };
const ROUTE = { tier: "balanced", sensitivity: "internal" } as const;
const USAGE: Usage = { inputTokens: 1_000, outputTokens: 100, serviceTier: "batch" };

function claimOne(s: ReturnType<typeof setup>, n: number, choice = BATCH) {
  return s.calls.deferred.claim(
    identity(n, { kind: "direct" }),
    choice,
    { ...REQUEST, serviceTier: "batch" },
    { account: s.account, route: ROUTE, validate: () => undefined, deadlineMs: 86_400_000 },
  );
}

describe("the deferred face of the governed call", () => {
  it("claims prepared with the route's trail, dispatches before egress, settles at the batch tier's price once", async () => {
    const s = setup({
      prices: BATCH_PRICES,
      caps: { perSessionUsd: { usd: 1, onExceeded: "block" } },
    });
    const claim = await claimOne(s, 1);
    if (claim.status !== "claimed") throw new Error(claim.status);
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("prepared");
    expect(claim.ticket.worstMicros).toBeGreaterThan(0);
    expect(s.audit.trail("routing")).toHaveLength(1);
    await s.calls.deferred.dispatch(claim.ticket);
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("dispatching");
    // Another process: a fresh account, the ticket as stored.
    const ticket = structuredClone(claim.ticket);
    const settled = await s.calls.deferred.settle(
      ticket,
      { status: "known", usage: USAGE },
      "end_turn",
      s.calls.account(),
    );
    // 1,000 × $1.5 + 100 × $7.5 per million tokens (the batch row, not the standard one): 2,250 micro-dollars.
    expect(settled).toMatchObject({
      status: "settled",
      applied: true,
      receipt: { serviceTier: "batch", usdMicros: 2_250, kind: "direct" },
    });
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("completed");
    expect(s.audit.trail("cost")).toHaveLength(1);
    const again = await s.calls.deferred.settle(
      ticket,
      { status: "known", usage: { ...USAGE, outputTokens: 999 } },
      "end_turn",
      s.calls.account(),
    );
    expect(again).toEqual({ status: "settled", applied: false, receipt: settled.receipt });
    expect(await s.spend.peek(SCOPE, "s1", "2026-01-01")).toMatchObject({ sessionMicros: 2_250 });
    expect(s.audit.trail("cost")).toHaveLength(1);
  });

  it("two settlers racing settle once: one applies, the other reads the same receipt", async () => {
    const s = setup({ prices: BATCH_PRICES });
    const claim = await claimOne(s, 1);
    if (claim.status !== "claimed") throw new Error(claim.status);
    await s.calls.deferred.dispatch(claim.ticket);
    const [a, b] = await Promise.all([
      s.calls.deferred.settle(
        claim.ticket,
        { status: "known", usage: USAGE },
        "end_turn",
        s.calls.account(),
      ),
      s.calls.deferred.settle(
        claim.ticket,
        { status: "known", usage: USAGE },
        "end_turn",
        s.calls.account(),
      ),
    ]);
    expect([a.applied, b.applied].sort()).toEqual([false, true]);
    expect(a.receipt).toEqual(b.receipt);
    expect((await s.settlements.list(SCOPE)).items).toHaveLength(1);
    expect(s.audit.trail("cost")).toHaveLength(1);
  });

  it("an unpriced batch tier is refused before anything is claimed, at zero cost", async () => {
    const s = setup({
      prices: { version: "p", models: { m: { rates: { input: 3, output: 15 } } } },
    });
    const claim = await claimOne(s, 1);
    expect(claim).toEqual({ status: "refused", reason: "unpriced", missing: "tier" });
    expect(await s.journal.get(SCOPE, "t1:main:1")).toBeUndefined();
    expect(s.audit.trail("cost")[0]).toMatchObject({
      usdMicros: 0,
      refused: { reason: "unpriced" },
    });
  });

  it("a call never dispatched cannot be settled from an answer; cancelled, its reservation is released", async () => {
    const s = setup({
      prices: BATCH_PRICES,
      caps: { perSessionUsd: { usd: 1, onExceeded: "block" } },
    });
    const claim = await claimOne(s, 1);
    if (claim.status !== "claimed") throw new Error(claim.status);
    await expect(
      s.calls.deferred.settle(
        claim.ticket,
        { status: "known", usage: USAGE },
        "end_turn",
        s.calls.account(),
      ),
    ).rejects.toMatchObject({ code: "uncertain_call" });
    await s.calls.deferred.cancel(claim.ticket, "store");
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("not_dispatched");
  });
});
