import {
  type BudgetCapsInput,
  ProviderError,
  type SpendStore,
  worstCaseMicros,
} from "@alma-harness/core";
import { InMemoryAdmissionStore, InMemoryExecutionStore } from "@alma-harness/core/testing";
import { GovernedCalls, type TurnAccount } from "@alma-harness/execution";
import { describe, expect, it } from "vitest";
import { CHOICE, client, identity, options, PRICES, REQUEST, SCOPE, setup } from "./fixtures.js";

const WORST = worstCaseMicros(PRICES, CHOICE, REQUEST) as number;
/** Room for two calls' worst cases in flight, not three. */
const TWO = (2 * WORST + WORST / 2) / 1e6;

/** A spend store whose reads wait until the test opens it: every call is held at its spend read. */
function slowReads(spend: SpendStore) {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const state = { reading: 0, open };
  const store: SpendStore = {
    peek: async (scope, sessionId, day) => {
      state.reading += 1;
      await opened;
      return spend.peek(scope, sessionId, day);
    },
    tenantDays: (org, opts) => spend.tenantDays(org, opts),
  };
  return { store, state };
}

/** Runs microtasks until `ready()` holds; fails (never waits for real time) when it does not. */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 2000 && !ready(); i++) await Promise.resolve();
  expect(ready()).toBe(true);
}

/**
 * Starts `n` calls of one turn at once, each held at the spend read (when it reads spend) until
 * every call is either reading or has ended; then lets them go. What each came to, in order.
 */
async function race(
  caps: BudgetCapsInput,
  n: number,
  start: (calls: GovernedCalls, account: TurnAccount, i: number) => Promise<{ status: string }>,
) {
  const s = setup({ caps });
  const slow = slowReads(s.spend);
  const calls = new GovernedCalls({ ...s.config, spend: slow.store });
  const account = calls.account();
  let ended = 0;
  const runs = Array.from({ length: n }, (_, i) =>
    start(calls, account, i + 1).finally(() => {
      ended += 1;
    }),
  );
  await until(() => slow.state.reading + ended === n);
  slow.state.open();
  const outcomes = await Promise.all(runs);
  const claimed = await Promise.all(
    outcomes.map((_, i) => s.journal.get(SCOPE, identity(i + 1).operationId)),
  );
  return { s, account, outcomes, claimed: claimed.filter((r) => r !== undefined).length };
}

const BLOCK = { usd: 1, onExceeded: "block" } as const;
const PERSISTENT: readonly [string, BudgetCapsInput][] = [
  ["no session or tenant-day cap", { perTurnUsd: TWO }],
  ["a session warn cap", { perTurnUsd: TWO, perSessionUsd: 1 }],
  ["a session block cap", { perTurnUsd: TWO, perSessionUsd: BLOCK }],
  ["a tenant-day warn cap", { perTurnUsd: TWO, perTenantDayUsd: 1 }],
  ["a tenant-day block cap", { perTurnUsd: TWO, perTenantDayUsd: BLOCK }],
];

describe("the per-turn block cap holds under parallel calls of one turn", () => {
  for (const [name, caps] of PERSISTENT) {
    it(`run, with ${name}: only the calls whose worst cases fit together are claimed and sent; the rest are refused at zero cost`, async () => {
      const c = client();
      const { account, outcomes, claimed } = await race(caps, 4, (calls, account, i) =>
        calls.run(identity(i), c, CHOICE, REQUEST, options(account)),
      );
      expect(outcomes).toEqual([
        expect.objectContaining({ status: "settled" }),
        expect.objectContaining({ status: "settled" }),
        { status: "refused", reason: "cap", cap: "perTurnUsd" },
        { status: "refused", reason: "cap", cap: "perTurnUsd" },
      ]);
      expect(c.streamed).toHaveLength(2);
      expect(claimed).toBe(2);
      expect(account).toMatchObject({ calls: 2, reservedMicros: 0, spentMicros: 210 });
    });

    it(`deferred claim, with ${name}: only the calls whose worst cases fit together are claimed`, async () => {
      const { account, outcomes, claimed } = await race(caps, 3, (calls, account, i) =>
        calls.deferred.claim(identity(i), CHOICE, REQUEST, {
          ...options(account),
          validate: () => undefined,
        }),
      );
      expect(outcomes.map((o) => o.status)).toEqual(["claimed", "claimed", "refused"]);
      expect(claimed).toBe(2);
      expect(account).toMatchObject({ calls: 2, reservedMicros: 2 * WORST });
    });
  }
});

describe("a call that holds its worst case and is not claimed gives it back", () => {
  it("refused by the session cap: nothing held", async () => {
    const s = setup({
      caps: {
        perTurnUsd: WORST / 1e6,
        perSessionUsd: { usd: (WORST - 1) / 1e6, onExceeded: "block" },
      },
    });
    expect(await s.calls.run(identity(1), client(), CHOICE, REQUEST, options(s.account))).toEqual({
      status: "refused",
      reason: "cap",
      cap: "perSessionUsd",
    });
    expect(s.account.reservedMicros).toBe(0);
  });

  it("a validate that throws, a spend read that fails, a fenced claim: nothing held, and the next call fits", async () => {
    const s = setup({ caps: { perTurnUsd: WORST / 1e6, perSessionUsd: BLOCK } });
    const invalid = client();
    invalid.validate = () => {
      throw new ProviderError("unsupported control", { kind: "unsupported", provider: "test" });
    };
    const down = new GovernedCalls({
      ...s.config,
      spend: { peek: () => Promise.reject(new Error("down")), tenantDays: async () => [] },
    });
    const journal = new InMemoryExecutionStore({
      admissions: new InMemoryAdmissionStore(),
      spend: s.spend,
    });
    const fenced = new GovernedCalls({ ...s.config, journal });
    const attempts: [string, () => Promise<unknown>][] = [
      [
        "call:main:request_invalid",
        () => s.calls.run(identity(1), invalid, CHOICE, REQUEST, options(s.account)),
      ],
      [
        "call:main:error",
        () => down.run(identity(2), client(), CHOICE, REQUEST, options(s.account)),
      ],
      [
        "admission_fenced",
        () =>
          fenced.run(
            identity(3, { admissionId: "a0" }),
            client(),
            CHOICE,
            REQUEST,
            options(s.account),
          ),
      ],
    ];
    for (const [cause, attempt] of attempts) {
      await expect(attempt()).rejects.toMatchObject({ uncertainCause: cause });
      expect(s.account.reservedMicros).toBe(0);
    }
    expect(
      (await s.calls.run(identity(4), client(), CHOICE, REQUEST, options(s.account))).status,
    ).toBe("settled");
  });
});
