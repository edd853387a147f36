import { conversationRootKey } from "@alma-harness/conversation";
import { defineTool } from "@alma-harness/core";
import {
  FakeModelClient,
  scriptedError,
  scriptedText,
  scriptedToolCall,
} from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { skipNote } from "./open.js";
import {
  completed,
  failOnce,
  openRetry,
  request,
  type Setup,
  SCOPE,
  unavailable,
} from "./retry-kit.js";
import { KINDS } from "./store-kit.js";

for (const [kind, enabled] of KINDS) {
  describe.skipIf(!enabled)(
    `what is not tried again on ${kind}${skipNote(enabled)} (spec: call-retry)`,
    () => {
      const open = (s: Setup) => openRetry(kind, s);

      it("without callAttempts a failed call stays uncertain, as before", async () => {
        const t = await open({ model: new FakeModelClient([scriptedError(unavailable())]) });
        try {
          expect((await t.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
          expect(t.uncertain.map((e) => e.cause)).toEqual(["call:main:server:none"]);
        } finally {
          await t.close();
        }
      });

      it("a store failure after the provider is never tried again", async () => {
        const model = new FakeModelClient([scriptedText("ok"), scriptedText("again")]);
        const t = await open({
          model,
          attempts: 3,
          wrap: (s) => ({ ...s, settlements: failOnce(s.settlements, "settle", "before") }),
        });
        try {
          expect((await t.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
          expect(model.calls).toBe(1);
        } finally {
          await t.close();
        }
      });

      it("an identity conflict (the operation already claimed) is never tried again", async () => {
        const model = new FakeModelClient([scriptedText("never")]);
        const t = await open({ model, attempts: 3 });
        try {
          const root = conversationRootKey(SCOPE, "s1", "k1");
          const now = t.clock.now();
          await t.stores.journal.claim({
            scope: SCOPE,
            operationId: `${root}:main:1`,
            sessionId: "s1",
            rootKey: root,
            turnId: root,
            kind: "main",
            clientId: "fake",
            model: "demo",
            priceVersion: "p1",
            policyVersion: "policy-1",
            createdAt: now,
            deadlineAt: now + 60_000,
          });
          expect((await t.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
          expect(t.uncertain.map((e) => e.cause)).toEqual(["call:main:error"]);
          expect(model.calls).toBe(0);
        } finally {
          await t.close();
        }
      });

      it("a fenced admission is never tried again: the session erased mid-turn ends it uncertain", async () => {
        let erase: () => Promise<unknown> = async () => undefined;
        const forget = defineTool({
          name: "forget_me",
          description: "Erases the session.",
          input: { type: "object", properties: {} },
          handler: async () => {
            await erase();
            return { ok: true };
          },
        });
        const model = new FakeModelClient([
          scriptedToolCall({ id: "c1", name: "forget_me", input: {} }),
          scriptedText("never"),
        ]);
        const t = await open({ model, attempts: 3, over: { tools: [forget] } });
        erase = () => t.runner.eraseSession(SCOPE, "s1");
        try {
          expect((await t.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
          expect(t.uncertain.map((e) => e.cause)).toEqual(["admission_fenced"]);
          expect(model.calls).toBe(1);
        } finally {
          await t.close();
        }
      });

      it("a block cap stays the budget stop: nothing sent, no attempt, no failure", async () => {
        const model = new FakeModelClient([scriptedText("never")]);
        const t = await open({
          model,
          attempts: 3,
          over: { caps: { perTurnUsd: { usd: 0.000001, onExceeded: "block" } } },
        });
        try {
          const result = completed(await t.runner.runTurn(request("k1")));
          expect(result).toMatchObject({
            terminalReason: "budget",
            budget: { metric: "perTurnUsd", answered: false },
          });
          expect(result.failures).toBeUndefined();
          expect(model.calls).toBe(0);
        } finally {
          await t.close();
        }
      });

      it("an AbortError from the client is never tried again: the turn stays uncertain", async () => {
        const model = new FakeModelClient([
          scriptedError(new DOMException("aborted by the store", "AbortError") as unknown as Error),
          scriptedText("never"),
        ]);
        const t = await open({ model, attempts: 3 });
        try {
          expect((await t.runner.runTurn(request("k1"))).status).toBe("reconciliation_required");
          expect(t.uncertain.map((e) => e.cause)).toEqual(["call:main:error"]);
          expect(model.calls).toBe(1);
        } finally {
          await t.close();
        }
      });
    },
  );
}
