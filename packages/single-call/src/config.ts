import {
  type AdmissionStore,
  type AuditLog,
  type BudgetCapsInput,
  type Clock,
  type CostSettlementStore,
  type DurabilityBarrier,
  type ExecutionResultStore,
  type ExecutionStore,
  type ModelClient,
  type ModelPolicy,
  type PriceTable,
  resolveTrailKey,
  type SpendStore,
  systemClock,
  type TrailKey,
  type TrailKeyMaterial,
  type UsageInbox,
  validateId,
} from "@alma-harness/core";
import { StepRunnerConfigError } from "./errors.js";

/**
 * The durable seams a step runner writes through: the governed call's own (journal, settlements,
 * spend, audit, usage inbox) and the root results namespace, where each key's result is kept. A
 * runtime's `ConversationStores` is one: the same journal and results a conversation uses, so one
 * erasure, one sweep and one `listUnresolved` cover both.
 */
export interface StepRunnerStores {
  readonly journal: ExecutionStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly audit: AuditLog;
  /** Each key's result (`sc1_…` ids, apart from a conversation's `c1_…` roots). */
  readonly rootResults: ExecutionResultStore;
  /**
   * An operator's scope fences (the conversation's admission store): a fenced tenant or person makes
   * no new single call (`ScopeFencedError`, before anything is durable); a stored key still replays.
   */
  readonly admissions?: Pick<AdmissionStore, "scopeFences">;
  readonly usageInbox?: UsageInbox;
  /** A store set that groups writes: committed after each result is stored. */
  readonly barrier?: DurabilityBarrier;
  /** A store set that groups writes into units (PostgreSQL `commits: "grouped"`): each call runs in one. */
  readonly unit?: <T>(work: () => Promise<T>) => Promise<T>;
}

export interface GovernedStepRunnerConfig {
  readonly stores: StepRunnerStores;
  readonly clients: readonly ModelClient[];
  /** Picks the model for an intent (synchronous, pure); a throw is `refused` / `not_admitted`, before any durable write. */
  readonly policy: ModelPolicy;
  readonly prices: PriceTable;
  /** Block caps: `perTurnUsd` bounds each call; session (the request's `sessionId`) and tenant-day caps are reserved in the store. */
  readonly caps?: BudgetCapsInput;
  readonly policyVersion: string;
  /** The behaviour revision a stored result answers under: a retry under another one conflicts. Bump it when the policy or prices change meaning. */
  readonly configRevision: string;
  /** The key of the trail pseudonyms and hashes (the runtime's); absent: the per-process key. */
  readonly trailKey?: TrailKey | TrailKeyMaterial;
  /** How long a key's result is kept and replayed. */
  readonly resultRetentionMs: number;
  /** The stored result's JSON size ceiling (default 64,000 characters): a larger answer is `invalid` / `output_chars`. */
  readonly maxResultChars?: number;
  /** The request's text ceiling (default 200,000 characters). */
  readonly maxInputChars?: number;
  /** Each call's round deadline (default 120 s). */
  readonly roundTimeoutMs?: number;
  /**
   * The seed's name for `roundTimeoutMs` (seed 002: "a call its step runner aborted (usually
   * stepTimeoutMs)"): the same setting. Give either; both with different values is refused.
   */
  readonly stepTimeoutMs?: number;
  readonly dispatchDeadlineMs?: number;
  readonly consumers?: readonly string[];
  readonly clock?: Clock;
}

export interface ResolvedStepConfig {
  readonly stores: StepRunnerStores;
  readonly clients: ReadonlyMap<string, ModelClient>;
  readonly policy: ModelPolicy;
  readonly configRevision: string;
  readonly trailKey: TrailKey;
  readonly resultRetentionMs: number;
  readonly maxResultChars: number;
  readonly maxInputChars: number;
  readonly roundTimeoutMs: number;
  readonly dispatchDeadlineMs: number;
  readonly clock: Clock;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1)
    throw new StepRunnerConfigError(`${name} must be a positive integer`);
  return v;
}

/** `roundTimeoutMs` under either of its names (`stepTimeoutMs` is the seed's). */
function roundTimeoutOf(config: GovernedStepRunnerConfig): number | undefined {
  const { roundTimeoutMs: present, stepTimeoutMs: seed } = config;
  if (present !== undefined && seed !== undefined && present !== seed)
    throw new StepRunnerConfigError("stepTimeoutMs is roundTimeoutMs: give one, or both equal");
  return present ?? seed;
}

/** Checks what the runner itself reads; `GovernedCalls` checks the rest (stores, prices, caps, policy version). */
export function resolveStepConfig(config: GovernedStepRunnerConfig): ResolvedStepConfig {
  if (config === null || typeof config !== "object")
    throw new StepRunnerConfigError("createGovernedStepRunner needs a configuration");
  const results = config.stores?.rootResults as unknown as Record<string, unknown> | undefined;
  if (!results || ["reserve", "put", "get"].some((m) => typeof results[m] !== "function"))
    throw new StepRunnerConfigError("stores.rootResults must be an ExecutionResultStore");
  if (typeof config.policy?.resolve !== "function")
    throw new StepRunnerConfigError("policy.resolve must be a function");
  const clients = new Map<string, ModelClient>();
  for (const client of config.clients ?? []) {
    if (clients.has(client.id))
      throw new StepRunnerConfigError(`client ${client.id} is given twice`);
    clients.set(client.id, client);
  }
  if (clients.size === 0)
    throw new StepRunnerConfigError("a step runner needs at least one client");
  try {
    validateId("configRevision", config.configRevision);
  } catch {
    throw new StepRunnerConfigError("configRevision must be an id");
  }
  return Object.freeze({
    stores: config.stores,
    clients,
    policy: config.policy,
    configRevision: config.configRevision,
    trailKey: resolveTrailKey(config.trailKey),
    resultRetentionMs: positive("resultRetentionMs", config.resultRetentionMs, 0),
    maxResultChars: positive("maxResultChars", config.maxResultChars, 64_000),
    maxInputChars: positive("maxInputChars", config.maxInputChars, 200_000),
    roundTimeoutMs: positive("roundTimeoutMs", roundTimeoutOf(config), 120_000),
    dispatchDeadlineMs: positive("dispatchDeadlineMs", config.dispatchDeadlineMs, 15 * 60_000),
    clock: config.clock ?? systemClock,
  });
}
