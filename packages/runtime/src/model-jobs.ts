import { ModelJobClient } from "@alma-harness/batch";
import {
  type AuditLog,
  type BudgetCapsInput,
  type Clock,
  type CostSettlementStore,
  type ExecutionStore,
  type ModelJobStore,
  type ModelJobTransport,
  type ModelPolicy,
  normalizeBudgetCaps,
  type PriceTable,
  type SpendStore,
  type TrailKey,
  type TrailKeyMaterial,
} from "@alma-harness/core";
import { GovernedCalls } from "@alma-harness/execution";

/** The stores a model job reads and writes: a runtime's own (`runtime.stores`), so its spend and reservations are the turns'. */
export interface ModelJobStores {
  readonly journal: ExecutionStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly audit: AuditLog;
  readonly modelJobs: ModelJobStore;
}

export interface ModelJobsConfig {
  readonly stores: ModelJobStores;
  readonly prices: PriceTable;
  readonly caps?: BudgetCapsInput;
  readonly policyVersion: string;
  /** The runtime's trail key (the same one its turns use). */
  readonly trailKey: TrailKey | TrailKeyMaterial;
  readonly transports: readonly ModelJobTransport[];
  readonly policy: ModelPolicy;
  readonly clock?: Clock;
  readonly windowMs?: number;
}

/**
 * A `ModelJobClient` over a runtime's stores (memory, SQLite or PostgreSQL): its own
 * `GovernedCalls` on the same journal, settlements, spend and audit, so a job's items count toward
 * the same session and tenant-day caps as the turns, and a job submitted by one process is
 * collected by another (a routine's next tick) from the same stores.
 */
export function modelJobs(config: ModelJobsConfig): ModelJobClient {
  const { stores } = config;
  const calls = governedCallsOver(stores, config);
  return new ModelJobClient({
    calls,
    jobs: stores.modelJobs,
    transports: config.transports,
    policy: config.policy,
    trailKey: config.trailKey,
    ...(config.clock ? { clock: config.clock } : {}),
    ...(config.windowMs !== undefined ? { windowMs: config.windowMs } : {}),
  });
}

/**
 * A `GovernedCalls` of its own over a runtime's journal, settlements, spend and audit: what a call
 * made beside the turns (a batch job's items, a recall's embedding) is governed by, so its spend and
 * reservations count toward the same session and tenant-day caps as the turns'.
 */
export function governedCallsOver(
  stores: Pick<ModelJobStores, "journal" | "settlements" | "spend" | "audit">,
  config: {
    readonly prices: PriceTable;
    readonly caps?: BudgetCapsInput;
    readonly policyVersion: string;
    readonly clock?: Clock;
  },
): GovernedCalls {
  return new GovernedCalls({
    journal: stores.journal,
    settlements: stores.settlements,
    spend: stores.spend,
    prices: config.prices,
    caps: normalizeBudgetCaps(config.caps),
    policyVersion: config.policyVersion,
    audit: stores.audit,
    ...(config.clock ? { clock: config.clock } : {}),
  });
}

/** Whether a store set keeps model jobs beside the turns' stores (every composition's: memory, SQLite, PostgreSQL). */
export function hasModelJobStores(stores: object): stores is ModelJobStores {
  const s = stores as Partial<ModelJobStores>;
  return (
    typeof s.modelJobs?.create === "function" &&
    typeof s.journal?.claim === "function" &&
    typeof s.settlements?.settle === "function" &&
    typeof s.audit?.append === "function"
  );
}

/** `modelJobs` over a runtime's own stores and trail key: what a host passes to `routineJobs`. */
export function runtimeModelJobs(
  runtime: { readonly stores: object; readonly trailKey: TrailKey },
  config: Omit<ModelJobsConfig, "stores" | "trailKey">,
): ModelJobClient {
  if (!hasModelJobStores(runtime.stores))
    throw new TypeError("the runtime's stores keep no model jobs");
  return modelJobs({ ...config, stores: runtime.stores, trailKey: runtime.trailKey });
}
