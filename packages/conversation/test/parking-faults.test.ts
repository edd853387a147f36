import type { ParkedTurnStore } from "@alma-harness/core";
import type { PermissionController } from "@alma-harness/loop";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { defineTool } from "@alma-harness/core";
import { describe, expect, it } from "vitest";
import { faulty, SCOPE, setup } from "./harness.js";

const TTL = 10 * 60_000;
const asks: PermissionController = { decide: (r) => (r.tool === "book" ? "ask" : "allow") };

/** Every parked-turn store call a turn's park, decision and resume make, and what each must come to. */
const CASES = [
  ["park", "reconciliation_required"],
  ["find", "completed"],
  ["decide", "completed"],
  ["get", "completed"],
  ["claim", "completed"],
  ["done", "completed"],
  ["due", "completed"],
] as const;

/**
 * A fault at every parked-turn store call, before its effect or after it (the effect landed, the
 * answer was lost): the turn never strands its session, never runs the booking twice, and ends in
 * one honest outcome once the operator retries and the maintenance tick runs.
 */
describe("parked turns with a fault at every store call", () => {
  for (const [method, outcome] of CASES)
    for (const when of ["before", "after"] as const)
      it(`${method} failing ${when} its effect: ${outcome}, the session free, at most one run`, async () => {
        const runs: string[] = [];
        const book = defineTool({
          name: "book",
          description: "Books a slot.",
          input: { type: "object", properties: { slot: { type: "string" } }, required: ["slot"] },
          handler: (input, ctx) => {
            runs.push(ctx.effectKey);
            return { booked: input.slot };
          },
        });
        let store!: ReturnType<typeof faulty<ParkedTurnStore>>;
        const t = setup({
          tools: [book],
          script: [
            scriptedToolCall(
              { id: "c1", name: "book", input: { slot: "mon-9" } },
              { text: "Booking." },
            ),
            scriptedText("Booked."),
            scriptedText("Hello again."),
          ],
          config: { permissions: asks, asks: "park", approvalTtlMs: TTL },
          wrap: (s) => {
            store = faulty(s.parked as ParkedTurnStore);
            return { ...s, parked: store };
          },
        });
        store.failNext(method, when);
        const first = await t.runner.runTurn(t.request("k1")).catch((e: unknown) => e);
        const rootKey = (first as { rootKey?: string }).rootKey as string;
        // The operator clicks approve, again after a failure (an untyped store error).
        for (let i = 0; i < 3; i++) {
          const listed = await t.runner.parkedAsks({ org: SCOPE.org }).catch(() => undefined);
          if (listed === undefined) continue;
          const ask = listed[0];
          if (!ask) break;
          const done = await t.runner
            .resolveAsk({ scope: SCOPE, askId: ask.askId, decision: "approve", by: "nurse" })
            .then(
              () => true,
              () => false,
            );
          if (done) break;
        }
        // Maintenance: resume what is due (twice: a failing tick is retried at the next).
        for (let i = 0; i < 2; i++) await t.runner.resumeDue().catch(() => undefined);
        t.clock.advance(TTL + 16 * 60_000 + 120_000);
        for (let i = 0; i < 2; i++) await t.runner.releaseExpired().catch(() => undefined);

        const read = await t.runner.read(SCOPE, rootKey);
        expect(read?.status).toBe(outcome);
        expect(runs.length).toBe(outcome === "completed" ? 1 : 0);
        if (outcome === "reconciliation_required")
          expect(t.uncertain.map((u) => u.rootKey)).toContain(rootKey);
        expect(await t.runner.parkedAsks({ org: SCOPE.org })).toEqual([]);
        const next = await t.runner.runTurn(t.request("k2", "hello"));
        expect(next.status).toBe("completed");
      });
});
