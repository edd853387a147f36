import {
  type AuditRecord,
  type BudgetCapsInput,
  defineTool,
  type Msg,
  type LifecycleHooks,
  type ModelChoice,
  normalizeBudgetCaps,
  type PriceTable,
  type ProviderToolSpec,
  type RoutingIntent,
  type Scope,
  type SpendStore,
  sessionPseudonym,
  type ToolDefinition,
  trailHash,
  trailKey,
} from "@alma-harness/core";
import {
  type AuditFailure,
  InMemoryCostSettlementStore,
  InMemoryExecutionStore,
  InMemorySpendStore,
  ManualClock,
  RecordingAuditLog,
  SequentialIds,
} from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import {
  type CacheHygieneGuard,
  type ContinuationWriter,
  createEngine,
  type LoopEvent,
  type LongContextPolicy,
  type LoopLimits,
  type MediaConfig,
  type PermissionController,
  type ExtractionConfig,
  type RecallConfig,
  type TurnInput,
  type TurnOutcome,
  type TurnResult,
  type VolatileContext,
} from "@alma-harness/loop";
import { FakeModelClient, type ScriptedResponse } from "@alma-harness/loop/testing";

export const PRICES: PriceTable = {
  version: "test-2026-11",
  models: {
    "fake-main": {
      rates: { input: 3, output: 15, cacheWrite5m: 3.75, cacheWrite1h: 6, cacheRead: 0.3 },
      webSearchPerRequestUsd: 0.01,
    },
    "fake-small": { rates: { input: 1, output: 5 } },
  },
};

export const SCOPE = { org: "clinic-a", uid: "patient-1" } as const;
/** The engine's trail key in tests: pseudonyms and hashes are deterministic, so a test can name the one it expects. */
export const TEST_TRAIL_KEY = trailKey("loop-test-trail-key-of-32-bytes-or-more");
/** The stored pseudonym of a session of `SCOPE` (or another scope). */
export const pseudonym = (sessionId = "s1", scope: Scope = SCOPE) =>
  sessionPseudonym(TEST_TRAIL_KEY, scope, sessionId);
/** The keyed hash the trails record for a sensitive value of `SCOPE`. */
export const hashed = (value: string, scope: Scope = SCOPE) =>
  trailHash(TEST_TRAIL_KEY, scope, value);

/** The default child route: the small client on the small model. */
export const SMALL_CHOICE: ModelChoice = {
  clientId: "small",
  model: "fake-small",
  maxOutputTokens: 256,
  cache: false,
};

export interface HarnessOptions {
  readonly script?: readonly ScriptedResponse[];
  /** Responses of the `small` client, which serves direct and delegate calls by default. */
  readonly smallScript?: readonly ScriptedResponse[];
  readonly tools?: readonly ToolDefinition[];
  readonly limits?: Partial<LoopLimits>;
  readonly hooks?: LifecycleHooks;
  readonly permissions?: PermissionController;
  readonly terminalTools?: readonly string[];
  readonly caps?: BudgetCapsInput;
  readonly prices?: PriceTable;
  readonly choice?: Partial<ModelChoice>;
  /** Replaces the whole policy (main and children). */
  readonly policy?: (intent: RoutingIntent) => ModelChoice;
  readonly providerTools?: readonly ProviderToolSpec[];
  readonly volatile?: (ctx: VolatileContext) => string | undefined;
  readonly volatileSystem?: readonly string[];
  readonly sink?: (event: LoopEvent) => void;
  readonly auditFail?: AuditFailure;
  /** Shared stores, to run several engines against one ledger. */
  readonly settlements?: InMemoryCostSettlementStore;
  /** Where the governed calls read spend from (default: the settlements' store), e.g. a slow read. */
  readonly spendRead?: (spend: SpendStore) => SpendStore;
  readonly clock?: ManualClock;
  /** The main client's provider (default `fake`), for provider-bound rejection proofs. */
  readonly provider?: string;
  readonly longContext?: LongContextPolicy;
  readonly releasePreStreamRejections?: boolean;
  readonly media?: MediaConfig;
  readonly recall?: RecallConfig;
  readonly extraction?: ExtractionConfig;
  readonly cacheHygiene?: CacheHygieneGuard;
  /** The static system prompt; default "You are a test agent.". */
  readonly system?: string;
  readonly continuations?: ContinuationWriter;
  readonly asks?: "wait" | "park";
}

/** A whole engine on in-memory stores, the manual clock and the scripted model. */
export function harness(opts: HarnessOptions = {}) {
  const clock = opts.clock ?? new ManualClock();
  const ids = new SequentialIds();
  const audit = new RecordingAuditLog(opts.auditFail ? { fail: opts.auditFail } : {});
  const settlements =
    opts.settlements ?? new InMemoryCostSettlementStore({ spend: new InMemorySpendStore() });
  const spend = settlements.spend;
  const journal = new InMemoryExecutionStore({ spend });
  const model = new FakeModelClient(
    opts.script ?? [],
    opts.provider ? { provider: opts.provider } : {},
  );
  const small = new FakeModelClient(opts.smallScript ?? [], { id: "small" });
  const choice: ModelChoice = {
    clientId: "fake",
    model: "fake-main",
    maxOutputTokens: 1024,
    cache: false,
    ...opts.choice,
  };
  const routes: RoutingIntent[] = [];
  const calls = new GovernedCalls({
    journal,
    settlements,
    spend: opts.spendRead ? opts.spendRead(spend) : spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "p1",
    audit,
    clock,
  });
  const events: LoopEvent[] = [];
  const engine = createEngine({
    clients: [model, small],
    policy: {
      resolve: (intent) => {
        routes.push(intent);
        if (opts.policy) return opts.policy(intent);
        return intent.task === "direct" ||
          intent.task === "delegate" ||
          intent.task === "summary" ||
          intent.task === "extraction"
          ? SMALL_CHOICE
          : choice;
      },
    },
    tools: opts.tools ?? [],
    terminalTools: opts.terminalTools ?? [],
    providerTools: opts.providerTools ?? [],
    system: opts.system ?? "You are a test agent.",
    ...(opts.cacheHygiene ? { cacheHygiene: opts.cacheHygiene } : {}),
    ...(opts.volatile ? { volatile: opts.volatile } : {}),
    ...(opts.volatileSystem ? { volatileSystem: opts.volatileSystem } : {}),
    hooks: opts.hooks ?? {},
    ...(opts.permissions ? { permissions: opts.permissions } : {}),
    limits: { maxCalls: 8, ...opts.limits },
    ...(opts.longContext ? { longContext: opts.longContext } : {}),
    ...(opts.releasePreStreamRejections !== undefined
      ? { releasePreStreamRejections: opts.releasePreStreamRejections }
      : {}),
    ...(opts.media ? { media: opts.media } : {}),
    ...(opts.recall ? { recall: opts.recall } : {}),
    ...(opts.extraction ? { extraction: opts.extraction } : {}),
    ...(opts.continuations ? { continuations: opts.continuations } : {}),
    ...(opts.asks ? { asks: opts.asks } : {}),
    calls,
    audit,
    trailKey: TEST_TRAIL_KEY,
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
  const trail = <T extends AuditRecord["trail"]>(name: T) => audit.trail(name);
  return {
    engine,
    calls,
    model,
    small,
    clock,
    audit,
    trail,
    journal,
    spend,
    settlements,
    events,
    input,
    routes,
    run: (o?: Partial<TurnInput>) => engine.runTurn(input(o)),
    /** The sink's events of one type, in order. */
    eventsOf: <T extends LoopEvent["type"]>(type: T) =>
      events.filter((e): e is Extract<LoopEvent, { type: T }> => e.type === type),
  };
}

export const echoTool = defineTool({
  name: "echo",
  description: "Echoes its text.",
  input: {
    type: "object",
    properties: { text: { type: "string" } },
    required: ["text"],
    additionalProperties: false,
  },
  handler: (input) => ({ echoed: input.text as string }),
});

/** A tool with a given handler and an open object schema. */
export function tool(
  name: string,
  handler: ToolDefinition["handler"],
  extra: Partial<Parameters<typeof defineTool>[0]> = {},
): ToolDefinition {
  return defineTool({
    name,
    description: `The ${name} tool.`,
    input: { type: "object" },
    handler,
    ...extra,
  });
}

/** Lets pending promise callbacks run (several microtask turns), without real time. */
export async function flush(times = 20): Promise<void> {
  for (let i = 0; i < times; i++) await Promise.resolve();
}

/** Runs microtasks until `ready()` holds; fails (never waits for real time) when it does not. */
export async function until(ready: () => boolean, what = "condition", max = 2000): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (ready()) return;
    await Promise.resolve();
  }
  throw new Error(`until: ${what} never held`);
}

export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** The result of a completed outcome; throws (failing the test) on any other. */
export function completed(outcome: TurnOutcome): TurnResult {
  if (outcome.status !== "completed")
    throw new Error(
      `expected completed, got ${outcome.status}${"cause" in outcome ? ` (${outcome.cause})` : ""}`,
    );
  return outcome.result;
}

/** An uncertain outcome; throws (failing the test) on any other. */
export function uncertain(
  outcome: TurnOutcome,
): Extract<TurnOutcome, { status: "reconciliation_required" }> {
  if (outcome.status !== "reconciliation_required")
    throw new Error(`expected reconciliation_required, got ${outcome.status}`);
  return outcome;
}

/** The messages a turn recorded (completed or uncertain); throws for an outcome that ran nothing. */
export function log(outcome: TurnOutcome): readonly Msg[] {
  if (outcome.status === "not_admitted")
    throw new Error("a turn that was not admitted recorded nothing");
  return outcome.messages;
}
