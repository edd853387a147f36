import {
  normalizeBudgetCaps,
  type PriceTable,
  ProviderError,
  worstCaseMicros,
} from "@alma-harness/core";
import { GovernedCalls, UncertainCallError } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import {
  answer,
  CHOICE,
  client,
  identity,
  options,
  PRICES,
  REQUEST,
  SCOPE,
  setup,
} from "./fixtures.js";

const WORST = worstCaseMicros(PRICES, CHOICE, REQUEST) as number;

describe("GovernedCalls.run: refused before anything is claimed or sent", () => {
  it("an unpriced call is refused at zero cost: nothing validated, claimed or counted; the refusal is on the cost trail", async () => {
    const s = setup();
    const c = client();
    const outcome = await s.calls.run(
      identity(),
      c,
      { ...CHOICE, model: "ghost" },
      { ...REQUEST, model: "ghost" },
      options(s.account),
    );
    expect(outcome).toEqual({ status: "refused", reason: "unpriced", missing: "model" });
    expect(c.validated).toEqual([]);
    expect(await s.journal.get(SCOPE, "t1:main:1")).toBeUndefined();
    expect(s.account.calls).toBe(0);
    expect(s.audit.trail("cost").map((e) => [e.usdMicros, e.refused])).toEqual([
      [0, { reason: "unpriced", detail: "no_price:model" }],
    ]);
  });

  it("a per-turn block cap: a call whose worst case fits exactly goes out; one micro-dollar less is refused at zero cost", async () => {
    const at = setup({ caps: { perTurnUsd: WORST / 1e6 } });
    expect(
      (await at.calls.run(identity(), client(), CHOICE, REQUEST, options(at.account))).status,
    ).toBe("settled");
    const under = setup({ caps: { perTurnUsd: (WORST - 1) / 1e6 } });
    const c = client();
    expect(await under.calls.run(identity(), c, CHOICE, REQUEST, options(under.account))).toEqual({
      status: "refused",
      reason: "cap",
      cap: "perTurnUsd",
    });
    expect(c.streamed).toEqual([]);
    expect(under.account.calls).toBe(0);
    expect(await under.journal.get(SCOPE, "t1:main:1")).toBeUndefined();
  });

  it("parallel calls of one turn hold their worst cases: the cap admits only what fits in flight, and frees it at settlement", async () => {
    const s = setup({ caps: { perTurnUsd: (2 * WORST) / 1e6 } });
    const runs = [1, 2, 3, 4, 5].map((n) =>
      s.calls.run(identity(n), client(), CHOICE, REQUEST, options(s.account)),
    );
    const outcomes = await Promise.all(runs);
    expect(outcomes.map((o) => o.status)).toEqual([
      "settled",
      "settled",
      "refused",
      "refused",
      "refused",
    ]);
    expect(s.account.reservedMicros).toBe(0);
    expect(s.account.spentMicros).toBe(210);
    // settled, the two leave room for more
    expect(
      (await s.calls.run(identity(6), client(), CHOICE, REQUEST, options(s.account))).status,
    ).toBe("settled");
  });

  it("a warn cap never refuses", async () => {
    const s = setup({ caps: { perTurnUsd: { usd: 0.000001, onExceeded: "warn" } } });
    expect(
      (await s.calls.run(identity(), client(), CHOICE, REQUEST, options(s.account))).status,
    ).toBe("settled");
  });

  it("a client's validate that throws stops the call before dispatch: claim not_dispatched (invalid), uncertain as request_invalid (seed 002: a refused request)", async () => {
    const s = setup();
    const c = client();
    c.validate = () => {
      throw new ProviderError("unsupported control", { kind: "unsupported", provider: "test" });
    };
    const error = await s.calls
      .run(identity(), c, CHOICE, REQUEST, options(s.account))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UncertainCallError);
    expect((error as UncertainCallError).uncertainCause).toBe("call:main:request_invalid");
    expect((error as UncertainCallError).attempt).toBeUndefined();
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "invalid",
    });
    expect(c.streamed).toEqual([]);
    expect(s.account.reservedMicros).toBe(0);
  });

  it("an operation claimed before is never sent twice", async () => {
    const s = setup();
    await s.calls.run(identity(), client(), CHOICE, REQUEST, options(s.account));
    const c = client();
    await expect(
      s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "call:main:error" });
    expect(c.streamed).toEqual([]);
    expect(s.account.reservedMicros).toBe(0);
  });

  it("without a block cap nothing is measured or held", async () => {
    const s = setup({ caps: { perTurnUsd: { usd: 1, onExceeded: "warn" } } });
    const torn = client(undefined, answer().slice(0, 1));
    await expect(
      s.calls.run(identity(), torn, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "call:main:torn:none" });
    expect(s.account.reservedMicros).toBe(0);
  });

  it("an account from another GovernedCalls' kind of object is refused", async () => {
    const s = setup();
    await expect(
      s.calls.run(identity(), client(), CHOICE, REQUEST, options({} as never)),
    ).rejects.toThrow(TypeError);
  });
});

describe("GovernedCalls.run: the call, whole", () => {
  it("commits dispatching before any byte leaves, then settles once and writes routing and cost trails", async () => {
    const s = setup();
    let stateAtEgress: string | undefined;
    const c = client(() => {
      void s.journal.get(SCOPE, "t1:main:1").then((r) => {
        stateAtEgress = r?.state;
      });
    });
    const dispatched: string[] = [];
    const outcome = await s.calls.run(
      identity(),
      c,
      CHOICE,
      REQUEST,
      options(s.account, {
        onDispatch: () => dispatched.push("now"),
        lifecycle: { step: 1, contextVersion: 1, messageRevision: 0 },
      }),
    );
    expect(stateAtEgress).toBe("dispatching");
    expect(dispatched).toEqual(["now"]);
    expect(outcome.status).toBe("settled");
    if (outcome.status !== "settled") return;
    expect(outcome.output.text).toBe("hi");
    expect(outcome.receipt).toMatchObject({ settlementId: "t1:main:1:settlement", usdMicros: 105 });
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "completed",
      settlementId: "t1:main:1:settlement",
    });
    expect(s.audit.events.map((e) => e.trail)).toEqual(["routing", "lifecycle", "cost", "routing"]);
    expect(s.account).toMatchObject({ spentMicros: 105, reservedMicros: 0, calls: 1 });
  });

  it("a routing trail that cannot be written ends the claim not dispatched: nothing sent, uncertain as audit", async () => {
    const s = setup({ auditFail: (e) => (e.trail === "routing" ? new Error("down") : undefined) });
    const c = client();
    await expect(
      s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "audit" });
    expect(c.streamed).toEqual([]);
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "audit",
    });
    expect(s.account.reservedMicros).toBe(0);
  });

  it("a torn stream is uncertain with unknown usage kept in the journal, and its worst case stays held", async () => {
    const s = setup({ caps: { perTurnUsd: 1 } });
    const torn = client(undefined, answer().slice(0, 1));
    await expect(
      s.calls.run(identity(), torn, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "call:main:torn:none" });
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "received",
      evidence: { status: "unknown" },
    });
    expect(s.account.reservedMicros).toBe(WORST);
  });

  it("a turn already cancelled ends the claim not dispatched: nothing sent", async () => {
    const s = setup();
    const c = client();
    const stop = new AbortController();
    stop.abort();
    await expect(
      s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account, { signal: stop.signal })),
    ).rejects.toMatchObject({ uncertainCause: "cancelled" });
    expect(c.streamed).toEqual([]);
    expect(await s.journal.get(SCOPE, "t1:main:1")).toMatchObject({
      state: "not_dispatched",
      notDispatchedCause: "aborted",
    });
  });

  it("prices by the tier the wire says served", async () => {
    const s = setup();
    const outcome = await s.calls.run(
      identity(),
      client(
        undefined,
        answer("hi", { inputTokens: 10, outputTokens: 5, serviceTier: "priority" }),
      ),
      CHOICE,
      REQUEST,
      options(s.account),
    );
    expect(
      outcome.status === "settled" && [outcome.receipt.serviceTier, outcome.receipt.usdMicros],
    ).toEqual(["priority", 210]);
  });

  it("usage the table cannot price is uncertain: evidence kept, nothing spent", async () => {
    const s = setup({
      prices: { version: "p", models: { m: { rates: { input: 3, output: 15 } } } },
    });
    const c = client(
      undefined,
      answer("hi", { inputTokens: 10, outputTokens: 5, serviceTier: "flex" }),
    );
    await expect(
      s.calls.run(identity(), c, CHOICE, REQUEST, options(s.account)),
    ).rejects.toMatchObject({ uncertainCause: "call:main:unsettled:end_turn" });
    expect((await s.journal.get(SCOPE, "t1:main:1"))?.state).toBe("received");
    expect(s.account.receipts).toEqual([]);
    expect(s.audit.trail("cost")).toEqual([]);
  });
});

describe("GovernedCalls: construction", () => {
  const base = () => setup().config;

  it("caps that were not normalized throw TypeError", () => {
    expect(() => new GovernedCalls({ ...base(), caps: { perTurnUsd: 1 } as never })).toThrow(
      TypeError,
    );
    expect(
      () =>
        new GovernedCalls({
          ...base(),
          caps: { perWeekUsd: { usdMicros: 1, onExceeded: "warn" } } as never,
        }),
    ).toThrow(TypeError);
    expect(
      () =>
        new GovernedCalls({
          ...base(),
          caps: { perTurnUsd: { usdMicros: -1, onExceeded: "block" } } as never,
        }),
    ).toThrow(TypeError);
    expect(
      () => new GovernedCalls({ ...base(), caps: normalizeBudgetCaps({ perTurnUsd: 1 }) }),
    ).not.toThrow();
    expect(() => normalizeBudgetCaps({ perTurnUsd: Number.NaN })).toThrow(TypeError);
  });

  it("a price table with a rate of seven decimals, a store without its methods, a bad policy version", () => {
    expect(
      () =>
        new GovernedCalls({
          ...base(),
          prices: { version: "v", models: { m: { rates: { input: 0.0000001, output: 1 } } } },
        }),
    ).toThrow(/six decimals/);
    expect(() => new GovernedCalls({ ...base(), journal: {} as never })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), policyVersion: "has space" })).toThrow(
      /policyVersion/,
    );
    expect(() => new GovernedCalls({ ...base(), consumers: ["a", "a"] })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), dispatchDeadlineMs: 0 })).toThrow(TypeError);
    expect(() => new GovernedCalls({ ...base(), reservationHoldMs: 0 })).toThrow(TypeError);
  });

  it("keeps a frozen copy of the price table", () => {
    const prices = structuredClone(PRICES) as { models: Record<string, unknown> };
    const calls = new GovernedCalls({ ...base(), prices: prices as unknown as PriceTable });
    prices.models.m = { rates: { input: 0, output: 0 } };
    expect(calls.prices.models.m?.rates.input).toBe(3);
    expect(Object.isFrozen(calls.prices)).toBe(true);
  });
});
