import {
  type BudgetCapsInput,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  normalizeBudgetCaps,
  type PriceTable,
} from "@alma-harness/core";
import { type AuditFailure, InMemoryCostSettlementStore, InMemoryExecutionStore, MANUAL_CLOCK_START, RecordingAuditLog } from "@alma-harness/core/testing";
import { type CallIdentity, GovernedCalls, type GovernedCallsConfig, newTurnLedger } from "@alma-harness/execution";

export const PRICES: PriceTable = {
  version: "p-1",
  models: {
    m: { rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 }, tiers: { priority: { input: 6, output: 30 } }, webSearchPerRequestUsd: 0.01 },
    bare: { rates: { input: 1, output: 5 } },
  },
};

export const SCOPE = { org: "acme", uid: "u1" } as const;
export const NOW = MANUAL_CLOCK_START;
export const CHOICE: ModelChoice = { clientId: "c", model: "m", maxOutputTokens: 100, cache: false };
export const REQUEST: ModelRequest = { model: "m", system: [], messages: [{ role: "user", blocks: [{ type: "text", text: "hi" }] }], tools: [], maxOutputTokens: 100 };

/** A client that records what it was asked and streams nothing; `onStream` sees the moment of egress. */
export function client(onStream?: () => void): ModelClient & { readonly streamed: ModelRequest[]; readonly validated: ModelRequest[] } {
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
      return { [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }) };
    },
  };
}

export function identity(n = 1, overrides: Partial<CallIdentity> = {}): CallIdentity {
  return { scope: SCOPE, sessionId: "s1", rootKey: "r1", turnId: "t1", operationId: `t1:main:${n}`, kind: "main", ...overrides };
}

export function setup(opts: { caps?: BudgetCapsInput; prices?: PriceTable; auditFail?: AuditFailure; settlements?: InMemoryCostSettlementStore } = {}) {
  const journal = new InMemoryExecutionStore();
  const settlements = opts.settlements ?? new InMemoryCostSettlementStore();
  const audit = new RecordingAuditLog(opts.auditFail ? { fail: opts.auditFail } : {});
  const config: GovernedCallsConfig = {
    journal,
    settlements,
    spend: settlements.spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "policy-1",
    audit,
  };
  return { calls: new GovernedCalls(config), config, journal, settlements, spend: settlements.spend, audit, ledger: newTurnLedger() };
}
