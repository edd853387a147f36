import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ModelJobInput, ModelJobClient } from "@alma-harness/batch";
import { ScriptedBatchTransport } from "@alma-harness/batch/testing";
import {
  type AuditLog,
  type BudgetCapsInput,
  type CostSettlementStore,
  type ExecutionStore,
  type ModelChoice,
  type ModelJobStore,
  type ModelPolicy,
  normalizeBudgetCaps,
  type PriceTable,
  type SpendStore,
  trailKey,
} from "@alma-harness/core";
import { inMemoryStores } from "@alma-harness/core/memory";
import { ManualClock, RecordingAuditLog } from "@alma-harness/core/testing";
import { GovernedCalls } from "@alma-harness/execution";
import { createPostgresStores } from "@alma-harness/store-postgres";
import { createSqliteStores } from "@alma-harness/store-sqlite";
import { afterEach } from "vitest";
import { DATABASE_URL } from "./store-kit.js";

/** The stores a model job touches: the governed call's and the job store. */
export interface JobStores {
  readonly journal: ExecutionStore;
  readonly settlements: CostSettlementStore;
  readonly spend: SpendStore;
  readonly modelJobs: ModelJobStore;
}

export const JOB_KEY = trailKey("model-jobs-test-trail-key-of-32-bytes!");
export const SCOPE = Object.freeze({ org: "clinic-7", uid: "nightly" });
export const DAY = "2026-01-01";

/** Standard $3/$15 per million; the batch tier at half: $1.5/$7.5. */
export const PRICES: PriceTable = {
  version: "p-jobs",
  models: { m: { rates: { input: 3, output: 15 }, tiers: { batch: { input: 1.5, output: 7.5 } } } },
};
export const UNPRICED_BATCH: PriceTable = {
  version: "p-std",
  models: { m: { rates: { input: 3, output: 15 } } },
};

/** Routes by sensitivity: restricted data to its own transport, the rest to `batch-a`. */
export const POLICY: ModelPolicy = {
  resolve: (intent): ModelChoice => ({
    clientId: intent.sensitivity === "restricted" ? "batch-r" : "batch-a",
    model: "m",
    maxOutputTokens: 200,
    cache: false,
  }),
};

/** One store set of a kind; `again()` opens a second handle on the same database (another process's view). */
export interface OpenedJobStores {
  readonly stores: JobStores;
  again(): Promise<JobStores>;
  close(): Promise<void>;
}

let schemas = 0;

export async function openJobStores(
  kind: "memory" | "sqlite" | "postgres",
): Promise<OpenedJobStores> {
  if (kind === "memory") {
    const stores = inMemoryStores();
    return { stores, again: async () => stores, close: async () => undefined };
  }
  if (kind === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "alma-jobs-"));
    const path = join(dir, "alma.db");
    const opened = [createSqliteStores({ path, commits: "each" })];
    return {
      stores: opened[0] as JobStores,
      again: async () => {
        const next = createSqliteStores({ path, commits: "each" });
        opened.push(next);
        return next;
      },
      close: async () => {
        for (const s of opened) s.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  schemas += 1;
  const names = {
    schema: `jobs_${process.pid}_${schemas}`,
    rootSchema: `jobs_root_${process.pid}_${schemas}`,
  };
  const first = await createPostgresStores({
    connectionString: DATABASE_URL,
    ...names,
    migrate: true,
    commits: "each",
  });
  const opened = [first];
  return {
    stores: first,
    again: async () => {
      const next = await createPostgresStores({
        connectionString: DATABASE_URL,
        ...names,
        commits: "each",
      });
      opened.push(next);
      return next;
    },
    close: async () => {
      for (const s of opened) await s.close();
    },
  };
}

/** An opener for the calling test file: each store set it opens is closed after its test. */
export function jobStoresPerTest(): (
  kind: "memory" | "sqlite" | "postgres",
) => Promise<OpenedJobStores> {
  const opened: OpenedJobStores[] = [];
  afterEach(async () => {
    for (const o of opened.splice(0)) await o.close();
  });
  return async (kind) => {
    const o = await openJobStores(kind);
    opened.push(o);
    return o;
  };
}

/** A ModelJobClient over `stores` with its own governed calls, audit, clock and transports (one process). */
export function jobClient(
  stores: JobStores,
  opts: {
    readonly caps?: BudgetCapsInput;
    readonly prices?: PriceTable;
    readonly transports?: readonly ScriptedBatchTransport[];
    readonly audit?: AuditLog;
    readonly clock?: ManualClock;
  } = {},
) {
  const clock = opts.clock ?? new ManualClock(Date.UTC(2026, 0, 1, 22));
  const audit = opts.audit ?? new RecordingAuditLog();
  const transports = opts.transports ?? [
    new ScriptedBatchTransport({ id: "batch-a", now: () => clock.now() }),
    new ScriptedBatchTransport({ id: "batch-r", now: () => clock.now() }),
  ];
  const calls = new GovernedCalls({
    journal: stores.journal,
    settlements: stores.settlements,
    spend: stores.spend,
    prices: opts.prices ?? PRICES,
    caps: normalizeBudgetCaps(opts.caps),
    policyVersion: "policy-jobs",
    audit,
    clock,
  });
  const client = new ModelJobClient({
    calls,
    jobs: stores.modelJobs,
    transports,
    policy: POLICY,
    trailKey: JOB_KEY,
    clock,
  });
  return {
    client,
    calls,
    clock,
    audit: audit as RecordingAuditLog,
    transport: transports[0] as ScriptedBatchTransport,
    transports,
  };
}

/** A job of `n` items summarizing one clinic's day, one session each. */
export function dayJob(
  jobId = "night-1",
  n = 2,
  over: { readonly sensitivity?: "confidential" | "restricted" } = {},
): ModelJobInput {
  return {
    jobId,
    items: Array.from({ length: n }, (_, i) => ({
      customId: `day-${i + 1}`,
      scope: SCOPE,
      sessionId: `patient-${i + 1}`,
      intent: { tier: "fast" as const, sensitivity: over.sensitivity ?? ("confidential" as const) },
      system: "Summarize the clinic day for the morning shift.",
      messages: [
        {
          role: "user" as const,
          blocks: [{ type: "text" as const, text: `Visit notes of patient ${i + 1}.` }],
        },
      ],
      maxOutputTokens: 100,
    })),
  };
}
