import { conversationRootKey } from "@alma-harness/conversation";
import { requestChars } from "@alma-harness/core";
import { FakeModelClient, scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { skipNote } from "./open.js";
import { completed, openRetry, request, SCOPE, type Setup } from "./retry-kit.js";
import { KINDS } from "./store-kit.js";

// Seed 002, "A refused request (spec: refused-request)": "When the call's journal reads
// not_dispatched with cause invalid for the attempt's own input, the step runner refused the
// request before dispatch: most often it is over maxRequestChars [...]. The same request is refused
// again, so the call ends without another attempt, with cause call:<kind>:request_invalid."

const ROOT = conversationRootKey(SCOPE, "s1", "k1");

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `maxRequestChars on ${kind}${skipNote(enabled)} (spec: refused-request)`,
    () => {
      /** Runs `k1` on a fresh store set of `kind`, hands the runner and stores to `check`, closes. */
      async function withTurn(
        s: Setup,
        check: (t: Awaited<ReturnType<typeof openRetry>>) => Promise<void>,
      ): Promise<void> {
        const t = await openRetry(kind, s);
        try {
          await check(t);
        } finally {
          await t.close();
        }
      }

      it("exactly at the ceiling the request is sent; one character over it is refused before dispatch, journal not_dispatched (invalid), and the key does not send it again", async () => {
        let size = 0;
        const free = new FakeModelClient([scriptedText("9 to 5.")]);
        await withTurn({ model: free }, async (t) => {
          completed(await t.runner.runTurn(request("k1")));
          size = requestChars(free.requests[0] as NonNullable<(typeof free.requests)[0]>);
        });
        const at = new FakeModelClient([scriptedText("9 to 5.")]);
        await withTurn({ model: at, attempts: 3, over: { maxRequestChars: size } }, async (t) => {
          expect(completed(await t.runner.runTurn(request("k1"))).reply).toEqual([
            { type: "text", text: "9 to 5." },
          ]);
          expect((await t.stores.journal.get(SCOPE, `${ROOT}:main:1`))?.state).toBe("completed");
        });
        const over = new FakeModelClient([scriptedText("never sent")]);
        await withTurn(
          { model: over, attempts: 3, over: { maxRequestChars: size - 1 } },
          async (t) => {
            const result = completed(await t.runner.runTurn(request("k1")));
            expect(result.unanswered).toEqual({ cause: "call:main:request_invalid" });
            expect(result.failures).toEqual([{ kind: "main", cause: "call:main:request_invalid" }]);
            expect(await t.stores.journal.get(SCOPE, `${ROOT}:main:1`)).toMatchObject({
              state: "not_dispatched",
              notDispatchedCause: "invalid",
            });
            expect(await t.stores.journal.get(SCOPE, `${ROOT}:main:2`)).toBeUndefined();
            const again = await t.runner.runTurn(request("k1"));
            expect(again).toMatchObject({ status: "completed", replayed: true });
            expect(over.calls).toBe(0);
          },
        );
      });
    },
  );
}
