import { ConversationConfigError, conversationRootKey } from "@alma-harness/conversation";
import { requestChars } from "@alma-harness/core";
import { scriptedText } from "@alma-harness/loop/testing";
import { describe, expect, it } from "vitest";
import { SCOPE, setup } from "./harness.js";

// Seed 002, "A refused request (spec: refused-request)": "When the call's journal reads
// not_dispatched with cause invalid for the attempt's own input, the step runner refused the
// request before dispatch: most often it is over maxRequestChars [...]. The same request is refused
// again, so the call ends without another attempt, with cause call:<kind>:request_invalid."

const ROOT = conversationRootKey(SCOPE, "s1", "k1");

/** The size (`requestChars`) of the turn's first main request, as the step runner measures it. */
async function firstRequestChars(): Promise<number> {
  const t = setup({ script: [scriptedText("Open 9 to 5.")] });
  await t.runner.runTurn(t.request("k1"));
  const sent = t.model.requests[0];
  if (!sent) throw new Error("the first request was not sent");
  return requestChars(sent);
}

describe("maxRequestChars (seed 002: a refused request)", () => {
  it("a request exactly at maxRequestChars is dispatched", async () => {
    const size = await firstRequestChars();
    const t = setup({ script: [scriptedText("Open 9 to 5.")], config: { maxRequestChars: size } });
    const view = await t.runner.runTurn(t.request("k1"));
    expect(view.status).toBe("completed");
    expect(t.model.calls).toBe(1);
    expect((await t.stores.journal.get(SCOPE, `${ROOT}:main:1`))?.state).toBe("completed");
  });

  it("one character over: refused before dispatch, journal not_dispatched (invalid), cause call:main:request_invalid; the same key does not dispatch again", async () => {
    const size = await firstRequestChars();
    const t = setup({
      script: [scriptedText("never sent")],
      config: { maxRequestChars: size - 1 },
    });
    const first = await t.runner.runTurn(t.request("k1"));
    expect(first.status).toBe("reconciliation_required");
    expect(t.model.calls).toBe(0);
    expect(t.uncertain.map((e) => e.cause)).toEqual(["call:main:request_invalid"]);
    const record = await t.stores.journal.get(SCOPE, `${ROOT}:main:1`);
    expect(record?.state).toBe("not_dispatched");
    expect(record?.notDispatchedCause).toBe("invalid");
    // A second delivery of the same key returns the original outcome and sends nothing.
    const again = await t.runner.runTurn(t.request("k1"));
    expect(again).toEqual(first);
    expect(t.model.calls).toBe(0);
    expect(await t.stores.journal.get(SCOPE, `${ROOT}:main:2`)).toBeUndefined();
  });

  it("with callAttempts: the call ends without another attempt, unanswered with call:main:request_invalid; the key replays it", async () => {
    const size = await firstRequestChars();
    const t = setup({
      script: [scriptedText("never sent")],
      config: { maxRequestChars: size - 1, callAttempts: 3 },
    });
    const first = await t.runner.runTurn(t.request("k1"));
    if (first.status !== "completed") throw new Error(`expected completed, got ${first.status}`);
    expect(first.result.unanswered).toEqual({ cause: "call:main:request_invalid" });
    expect(first.result.failures).toEqual([{ kind: "main", cause: "call:main:request_invalid" }]);
    expect(first.result.unsettledCalls ?? 0).toBe(0); // its reservation was released with the claim
    expect(t.model.calls).toBe(0);
    expect((await t.stores.journal.get(SCOPE, `${ROOT}:main:1`))?.notDispatchedCause).toBe(
      "invalid",
    );
    expect(await t.stores.journal.get(SCOPE, `${ROOT}:main:2`)).toBeUndefined();
    expect(await t.runner.runTurn(t.request("k1"))).toEqual({ ...first, replayed: true });
    expect(t.model.calls).toBe(0);
  });

  it("absent: no ceiling; a ceiling that is not a positive integer is refused at construction", () => {
    expect(() => setup({ config: { maxRequestChars: 0 } })).toThrow(ConversationConfigError);
    expect(() => setup({ config: { maxRequestChars: 1.5 } })).toThrow(ConversationConfigError);
    expect(() => setup()).not.toThrow();
  });
});
