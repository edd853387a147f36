import {
  type BudgetCapsInput,
  defineTool,
  type LifecycleHooks,
  type ModelChoice,
  normalizeBudgetCaps,
  type PriceTable,
  type ProviderToolSpec,
  type ToolDefinition,
} from "@alma-harness/core";
import {
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  InMemorySpendStore,
  ManualClock,
  RecordingAuditLog,
  SequentialIds,
} from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type LoopEvent, type LoopLimits, type PermissionController, type TurnInput } from "@alma-harness/loop";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";

export const PRICES: PriceTable = {
  version: "test-2026-11",
  models: {
    "fake-main": { rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 }, webSearchPerRequestUsd: 0.01 },
    "fake-small": { rates: { input: 1, output: 5 } },
  },
};

export const SCOPE = { org: "clinic-a", uid: "patient-1" } as const;

export interface HarnessOptions {
  readonly script?: readonly ScriptedResponse[];
  readonly tools?: readonly ToolDefinition[];
  readonly limits?: Partial<LoopLimits>;
  readonly hooks?: LifecycleHooks;
  readonly permissions?: PermissionController;
  readonly terminalTools?: readonly string[];
  readonly caps?: BudgetCapsInput;
  readonly prices?: PriceTable;
  readonly choice?: Partial<ModelChoice>;
  readonly providerTools?: readonly ProviderToolSpec[];
  readonly volatile?: () => string | undefined;
  readonly sink?: (event: LoopEvent) => void;
}

/** A whole engine on in-memory stores, the manual clock and the scripted model. */
export function harness(opts: HarnessOptions = {}) {
  const clock = new ManualClock();
  const ids = new SequentialIds();
  const audit = new RecordingAuditLog();
  const journal = new InMemoryExecutionStore();
  const spend = new InMemorySpendStore();
  const settlements = new InMemoryCostSettlementStore({ spend });
  const model = new FakeModelClient(opts.script ?? []);
  const small = new FakeModelClient([], { id: "small" });
  const choice: ModelChoice = { clientId: "fake", model: "fake-main", maxOutputTokens: 1024, cache: false, ...opts.choice };
  const routes: { intent: unknown }[] = [];
  const calls = new GovernedCalls({
    journal,
    settlements,
    spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "p1",
    audit,
  });
  const events: LoopEvent[] = [];
  const engine = createEngine({
    clients: [model, small],
    policy: {
      resolve: (intent) => {
        routes.push({ intent });
        if (intent.task === "direct" || intent.task === "delegate") return { clientId: "small", model: "fake-small", maxOutputTokens: 256, cache: false };
        return choice;
      },
    },
    tools: opts.tools ?? [],
    terminalTools: opts.terminalTools ?? [],
    providerTools: opts.providerTools ?? [],
    system: "You are a test agent.",
    ...(opts.volatile ? { volatile: opts.volatile } : {}),
    hooks: opts.hooks ?? {},
    ...(opts.permissions ? { permissions: opts.permissions } : {}),
    limits: { maxCalls: 8, ...opts.limits },
    calls,
    audit,
    clock,
    ids,
    sink: (e) => {
      events.push(e);
      opts.sink?.(e);
    },
  });
  let turns = 0;
  const input = (overrides: Partial<TurnInput> = {}): TurnInput => {
    turns += 1;
    return {
      scope: SCOPE,
      sessionId: "s1",
      rootKey: `root-${turns}`,
      turnId: `turn-${turns}`,
      history: [],
      revision: 0,
      input: [{ type: "text", text: "Hello" }],
      intent: { tier: "balanced", sensitivity: "internal" },
      ...overrides,
    };
  };
  return { engine, model, small, clock, audit, journal, spend, settlements, events, input, routes, run: (o?: Partial<TurnInput>) => engine.runTurn(input(o)) };
}

export const echoTool = defineTool({
  name: "echo",
  description: "Echoes its text.",
  input: { type: "object", properties: { text: { type: "string" } }, required: ["text"], additionalProperties: false },
  handler: (input) => ({ echoed: input.text as string }),
});

/** Lets pending promise callbacks run (several microtask turns), without real time. */
export async function flush(times = 20): Promise<void> {
  for (let i = 0; i < times; i++) await Promise.resolve();
}
