import {
  type BudgetCapsInput,
  type Usage,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  normalizeBudgetCaps,
  type PriceTable,
  sessionPseudonym,
  trailKey,
} from "@alma-harness/core";
import {
  type AuditFailure,
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  MANUAL_CLOCK_START,
  ManualClock,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import {
  type CallIdentity,
  type CallOptions,
  GovernedCalls,
  type GovernedCallsConfig,
  type TurnAccount,
} from "@alma-harness/execution";

export const PRICES: PriceTable = {
  version: "p-1",
  models: {
    m: {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
      tiers: { priority: { input: 6, output: 30 } },
      webSearchPerRequestUsd: 0.01,
    },
    bare: { rates: { input: 1, output: 5 } },
  },
};

export const SCOPE = { org: "acme", uid: "u1" } as const;
/** A fixed trail key for the tests: the session's pseudonym is deterministic. */
export const TEST_TRAIL_KEY = trailKey("test-trail-key-of-at-least-32-bytes!");
export const NOW = MANUAL_CLOCK_START;
export const CHOICE: ModelChoice = {
  clientId: "c",
  model: "m",
  maxOutputTokens: 100,
  cache: false,
};
export const REQUEST: ModelRequest = {
  model: "m",
  system: [],
  messages: [{ role: "user", blocks: [{ type: "text", text: "hi" }] }],
  tools: [],
  maxOutputTokens: 100,
};

/** A stream that answers `text` with `usage` (the terminal frame agreeing with what streamed). */
export function answer(
  text = "hi",
  usage: Usage = { inputTokens: 10, outputTokens: 5 },
): readonly ModelStreamEvent[] {
  return [
    { type: "text_delta", text },
    { type: "usage", evidence: { status: "known", usage } },
    { type: "response_completed", stopReason: "end_turn", text, toolCalls: [], usage },
  ];
}

/**
 * A client that records what it was asked and streams `script` (default: one answer);
 * `onStream` sees the moment of egress.
 */
export function client(
  onStream?: () => void,
  script: readonly ModelStreamEvent[] = answer(),
): ModelClient & { readonly streamed: ModelRequest[]; readonly validated: ModelRequest[] } {
  const streamed: ModelRequest[] = [];
  const validated: ModelRequest[] = [];
  return {
    id: "c",
    provider: "test",
    streamed,
    validated,
    validate: (request) => void validated.push(request),
    stream: (request): AsyncIterable<ModelStreamEvent> => {
      streamed.push(request);
      onStream?.();
      return (async function* () {
        yield* script;
      })();
    },
  };
}

export function identity(n = 1, overrides: Partial<CallIdentity> = {}): CallIdentity {
  return {
    scope: SCOPE,
    sessionId: "s1",
    trailSession: sessionPseudonym(TEST_TRAIL_KEY, SCOPE, "s1"),
    rootKey: "r1",
    turnId: "t1",
    operationId: `t1:main:${n}`,
    kind: "main",
    ...overrides,
  };
}

export function setup(
  opts: {
    caps?: BudgetCapsInput;
    prices?: PriceTable;
    auditFail?: AuditFailure;
    settlements?: InMemoryCostSettlementStore;
  } = {},
) {
  const settlements = opts.settlements ?? new InMemoryCostSettlementStore();
  const journal = new InMemoryExecutionStore({ spend: settlements.spend });
  const audit = new RecordingAuditLog(opts.auditFail ? { fail: opts.auditFail } : {});
  const config: GovernedCallsConfig = {
    journal,
    settlements,
    spend: settlements.spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "policy-1",
    audit,
    clock: new ManualClock(),
  };
  const calls = new GovernedCalls(config);
  const account = calls.account();
  return { calls, config, journal, settlements, spend: settlements.spend, audit, account };
}

/** The options of a main-step call in a live turn of `account`. */
export function options(account: TurnAccount, overrides: Partial<CallOptions> = {}): CallOptions {
  return {
    account,
    signal: new AbortController().signal,
    roundTimeoutMs: 60_000,
    route: { tier: "balanced", sensitivity: "internal" },
    seenCallIds: new Set(),
    ...overrides,
  };
}
