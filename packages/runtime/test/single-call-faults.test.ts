import type { ConversationStores } from "@alma-harness/conversation";
import { AlmaError, type Scope } from "@alma-harness/core";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import type { StepResult } from "@alma-harness/single-call";
import { InjectedStoreFault, tapStore, tapStores } from "@alma-harness/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepRunner, triage } from "./single-call-kit.js";
import { KINDS, type OpenedStores, openStores } from "./store-kit.js";

const ANSWER = '{"category":"billing","urgency":3}';

/** The store set with a fault at its `target`-th store call (0-based), `before` it runs or `after` it ran; `calls` names every call seen. */
function faultAt(
  stores: ConversationStores,
  target: number,
  mode: "before" | "after" | "none",
  calls: string[],
): ConversationStores {
  return tapStores(stores, (name, store) =>
    tapStore(store, async (method, call) => {
      const index = calls.length;
      calls.push(`${name}.${method}`);
      if (index === target && mode === "before")
        throw new InjectedStoreFault("before", name, method);
      const out = await call();
      if (index === target && mode === "after") throw new InjectedStoreFault("after", name, method);
      return out;
    }),
  );
}

describe.each(KINDS)("a store fault at each store call of a step call, on %s", (kind, enabled) => {
  let opened: OpenedStores;
  beforeAll(async () => {
    if (enabled) opened = await openStores(kind, "single_faults");
  });
  afterAll(async () => opened?.close());

  it.skipIf(!enabled)(
    "ends reconciliation_required or in a typed error, and a retry under the key never dispatches a second time",
    async () => {
      const scope: Scope = { org: `faults-${kind}-${process.pid}`, uid: "desk" };
      const clean: string[] = [];
      const probe = new FakeModelClient([scriptedText(ANSWER)]);
      const first = await stepRunner(faultAt(opened.stores, -1, "none", clean), probe, {
        caps: { perTenantDayUsd: { usd: 5, onExceeded: "block" } },
      }).run(triage(scope, "probe"));
      expect(first.status).toBe("completed");
      // Every store call of one whole step call, in order (reads, the claim, trails, settlement, the result).
      expect(clean).toEqual(
        expect.arrayContaining([
          "rootResults.get",
          "rootResults.reserve",
          "journal.claim",
          "journal.dispatch",
          "settlements.settle",
          "rootResults.put",
        ]),
      );
      const seen: Record<string, number> = {};
      for (let target = 0; target < clean.length; target++) {
        for (const mode of ["before", "after"] as const) {
          const key = `k-${target}-${mode}`;
          const client = new FakeModelClient([scriptedText(ANSWER), scriptedText(ANSWER)]);
          const caps = { perTenantDayUsd: { usd: 5, onExceeded: "block" as const } };
          let outcome: StepResult | AlmaError;
          try {
            outcome = await stepRunner(faultAt(opened.stores, target, mode, []), client, {
              caps,
            }).run(triage(scope, key));
          } catch (error) {
            expect(error).toBeInstanceOf(AlmaError);
            outcome = error as AlmaError;
          }
          const label = outcome instanceof AlmaError ? `error:${outcome.code}` : outcome.status;
          seen[label] = (seen[label] ?? 0) + 1;
          // A completed answer despite the fault is only possible when the fault hit nothing the answer needs.
          if (!(outcome instanceof AlmaError) && outcome.status === "completed")
            expect(outcome.object).toEqual({ category: "billing", urgency: 3 });
          const dispatched = client.calls;
          expect(dispatched).toBeLessThanOrEqual(1);
          // The retry, with the stores healthy: a replay, an in-progress or uncertain answer, or the first dispatch if none happened.
          let retry: StepResult | AlmaError;
          try {
            retry = await stepRunner(opened.stores, client, { caps }).run(triage(scope, key));
          } catch (error) {
            expect(error).toBeInstanceOf(AlmaError);
            retry = error as AlmaError;
          }
          expect(client.calls, `${clean[target]} ${mode}`).toBeLessThanOrEqual(1);
          if (dispatched === 1 && !(retry instanceof AlmaError))
            expect(["completed", "reconciliation_required"]).toContain(retry.status);
          if (
            !(outcome instanceof AlmaError) &&
            outcome.status === "completed" &&
            !(retry instanceof AlmaError)
          )
            expect(retry).toEqual({ ...outcome, replayed: true });
        }
      }
      expect(seen.reconciliation_required ?? 0).toBeGreaterThan(0);
      console.log(
        `single-call faults on ${kind}: ${clean.length} store calls x 2 modes: ${JSON.stringify(seen)}`,
      );
    },
  );
});
