import type {
  Clock,
  CostReceipt,
  FailureKind,
  ModelJob,
  ModelJobBatchStatus,
  ModelJobItem,
  ModelJobItemOutcome,
  ModelJobItemResult,
  ModelJobStore,
  ModelJobTransport,
  RefusalCategory,
  StopReason,
  StreamToolCall,
  TrailKey,
  Usage,
  UsageEvidence,
} from "@alma-harness/core";
import type { GovernedCalls, TurnAccount } from "@alma-harness/execution";
import type { ModelJobUncertainCause } from "./client.js";
import { ticketOfItem } from "./tickets.js";

/** One item as a collection returns it: what the provider said, and the receipt it settled into. */
export interface CollectedItem {
  readonly customId: string;
  readonly outcome: ModelJobItemOutcome;
  readonly receipt: CostReceipt;
  /** Whether this collection applied the receipt (`false`: settled before, or by another collector). */
  readonly applied: boolean;
  /** A `succeeded` item's answer (content: returned to the caller, stored nowhere here). */
  readonly answer?: {
    readonly stopReason: StopReason;
    readonly text: string;
    readonly toolCalls: readonly StreamToolCall[];
    readonly refusal?: RefusalCategory;
  };
  readonly failure?: FailureKind;
}

export type ModelJobCollection =
  /** The provider has not ended the batch: collect again later. */
  | { readonly status: "pending"; readonly job: ModelJob; readonly batch: ModelJobBatchStatus }
  | {
      readonly status: "collected";
      readonly job: ModelJob;
      readonly items: readonly CollectedItem[];
    }
  /** Recorded but never submitted (`claimed`, `cancelled`): nothing to collect. */
  | { readonly status: "not_submitted"; readonly job: ModelJob }
  | {
      readonly status: "reconciliation_required";
      readonly job: ModelJob;
      readonly cause: ModelJobUncertainCause;
      /** The items settled by this collection before it stopped, and the custom ids that are not. */
      readonly items?: readonly CollectedItem[];
      readonly uncertain?: readonly string[];
    };

export interface CollectDeps {
  readonly calls: GovernedCalls;
  readonly jobs: ModelJobStore;
  readonly transport: ModelJobTransport;
  readonly key: TrailKey;
  readonly clock: Clock;
}

/** An item the provider did not answer costs nothing (neither provider bills it): zero tokens at the batch tier. */
const UNANSWERED: Usage = Object.freeze({ inputTokens: 0, outputTokens: 0, serviceTier: "batch" });

/**
 * Polls a submitted job; once ended, settles every item exactly once through its own governed
 * receipt at the batch tier's price (`calls.deferred.settle`: one settlement however many
 * collectors race), records it on the job, and marks the job `collected` when every item is. A
 * batch the provider `failed` as a whole ran nothing: each item settles at zero as `errored`. An
 * item with no result, or whose settlement is uncertain, leaves the job for an operator.
 */
export async function collectJob(deps: CollectDeps, job: ModelJob): Promise<ModelJobCollection> {
  const batchId = job.batchId as string;
  const status = await deps.transport.poll(batchId);
  if (status === "in_progress" || status === "canceling")
    return { status: "pending", job, batch: status };
  const results = status === "failed" ? failedBatch(job) : await deps.transport.results(batchId);
  const byId = new Map<string, ModelJobItemResult>();
  for (const r of results) if (!byId.has(r.customId)) byId.set(r.customId, r);
  const account = deps.calls.account();
  const items: CollectedItem[] = [];
  const uncertain: string[] = [];
  for (const item of job.items) {
    const result = byId.get(item.customId);
    const collected =
      result === undefined
        ? undefined
        : await settleItem(deps, job, item, result, account).catch(() => undefined);
    if (collected) items.push(collected);
    else uncertain.push(item.customId);
  }
  if (uncertain.length > 0)
    return {
      status: "reconciliation_required",
      job: (await deps.jobs.get(job.scope, job.jobId)) ?? job,
      cause: "item_uncertain",
      items,
      uncertain,
    };
  const collected = await markCollected(deps, job).catch(() => undefined);
  // Every item is settled; only the job's own state could not be recorded: the next collect replays.
  if (!collected)
    return { status: "reconciliation_required", job, cause: "store", items, uncertain: [] };
  return { status: "collected", job: collected, items };
}

async function settleItem(
  deps: CollectDeps,
  job: ModelJob,
  item: ModelJobItem,
  result: ModelJobItemResult,
  account: TurnAccount,
): Promise<CollectedItem> {
  const ticket = ticketOfItem(job.scope, item, deps.key);
  const answered = result.type === "succeeded";
  // The Batch API is the batch tier: every item is priced at its row, whatever the body says.
  const usage: Usage = answered ? { ...result.usage, serviceTier: "batch" } : UNANSWERED;
  const stop = answered ? result.stopReason : "none";
  const evidence: UsageEvidence =
    answered && result.usageUnresolved !== undefined
      ? { status: "unpriced", usage, reason: result.usageUnresolved }
      : { status: "known", usage };
  const settled = await deps.calls.deferred.settle(ticket, evidence, stop, account);
  await deps.jobs.settleItem(job.scope, job.jobId, item.customId, {
    settlementId: settled.receipt.settlementId,
    outcome: result.type,
  });
  return Object.freeze({
    customId: item.customId,
    outcome: result.type,
    receipt: settled.receipt,
    applied: settled.applied,
    ...(answered
      ? {
          answer: Object.freeze({
            stopReason: result.stopReason,
            text: result.text,
            toolCalls: result.toolCalls,
            ...(result.refusal !== undefined ? { refusal: result.refusal } : {}),
          }),
        }
      : result.failure !== undefined
        ? { failure: result.failure }
        : {}),
  });
}

/** `submitted → collected`; another collector's step made first (or a write that landed but failed) reads back as collected. */
async function markCollected(deps: CollectDeps, job: ModelJob): Promise<ModelJob> {
  if (job.state === "collected") return job;
  try {
    return await deps.jobs.advance(job.scope, job.jobId, {
      from: "submitted",
      to: "collected",
      at: deps.clock.now(),
    });
  } catch (error) {
    const now = await deps.jobs.get(job.scope, job.jobId);
    if (now?.state === "collected") return now;
    throw error;
  }
}

function failedBatch(job: ModelJob): readonly ModelJobItemResult[] {
  return job.items.map((i) => ({
    customId: i.customId,
    type: "errored" as const,
    failure: "invalid_request" as const,
  }));
}
