import { requestChars, worstCaseMicros } from "@alma-harness/core";
import { GovernedCalls, UncertainCallError } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, options, PRICES, REQUEST, SCOPE, setup } from "./fixtures.js";

// Seed 002, "A refused request (spec: refused-request)": the step runner refuses a request over
// maxRequestChars before dispatch; the call's journal reads not_dispatched with cause invalid.

const SIZE = requestChars(REQUEST);
const WORST = worstCaseMicros(PRICES, CHOICE, REQUEST) as number;

/** A step runner with a ceiling and a session block cap that fits exactly one call's worst case. */
function ceiling(maxRequestChars: number) {
  const s = setup({ caps: { perSessionUsd: { usd: WORST / 1e6, onExceeded: "block" } } });
  return { ...s, calls: new GovernedCalls({ ...s.config, maxRequestChars }) };
}

describe("GovernedCalls: maxRequestChars (seed 002: a refused request)", () => {
  it("a request exactly at the ceiling is dispatched and settled", async () => {
    const s = ceiling(SIZE);
    const c = client();
    const outcome = await s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account));
    expect(outcome.status).toBe("settled");
    expect(c.streamed).toHaveLength(1);
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("completed");
  });

  it("one character over: never validated or sent, the claim not_dispatched (invalid) with its reservation released, request_invalid and no attempt class", async () => {
    const s = ceiling(SIZE - 1);
    const c = client();
    const refused = s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account));
    await expect(refused).rejects.toBeInstanceOf(UncertainCallError);
    await expect(refused).rejects.toMatchObject({
      uncertainCause: "call:main:request_invalid",
      attempt: undefined, // no attempt class: the same request is refused again
    });
    expect(c.validated).toEqual([]);
    expect(c.streamed).toEqual([]);
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "invalid",
    });
    expect(s.account.reservedMicros).toBe(0);
    expect(s.account.calls).toBe(0);
    expect(s.account.unsettled).toBe(0);
    // The session cap fits one worst case: the refused claim's reservation is free again.
    const small = { ...REQUEST, messages: [] };
    expect(
      (await s.calls.run(identity(2), client(), CHOICE, small, options(s.account))).status,
    ).toBe("settled");
  });

  it("a ceiling that is not a positive integer is refused at construction", () => {
    const s = setup();
    for (const bad of [0, -1, 1.5, Number.NaN])
      expect(() => new GovernedCalls({ ...s.config, maxRequestChars: bad })).toThrow(TypeError);
  });
});
