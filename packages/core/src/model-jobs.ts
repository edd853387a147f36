import type { FailureKind } from "./failures.js";
import type { ModelRequest, RefusalCategory, StopReason, StreamToolCall } from "./model.js";
import type { Usage } from "./usage.js";

/** One item of a job as a transport sends it: its custom id (how its answer comes back) and its request. */
export interface ModelJobRequestItem {
  readonly customId: string;
  readonly request: ModelRequest;
}

/**
 * Where a provider's batch is, as a closed vocabulary: `in_progress` (validating, queued, running),
 * `canceling`, `ended` (its results can be read: every item answered, errored, was cancelled or
 * expired), `failed` (the provider refused the batch as a whole: nothing in it ran).
 */
export type ModelJobBatchStatus = "in_progress" | "canceling" | "ended" | "failed";

/** One item's answer, mapped once at the adapter into the neutral format. */
export type ModelJobItemResult =
  | {
      readonly customId: string;
      readonly type: "succeeded";
      readonly stopReason: StopReason;
      readonly text: string;
      readonly toolCalls: readonly StreamToolCall[];
      /** The item's usage; its `serviceTier` is `batch` (the Batch API is the batch tier). */
      readonly usage: Usage;
      /** Counts known, attribution not (a cache write without its TTL split…): never priced, the item stays uncertain. */
      readonly usageUnresolved?: string;
      readonly refusal?: RefusalCategory;
    }
  | {
      readonly customId: string;
      /** The provider did not answer the item; both providers bill none of these. */
      readonly type: "errored" | "canceled" | "expired";
      readonly failure?: FailureKind;
    };

/** What reconciliation found for a submission whose acknowledgement was lost. */
export type ModelJobFound =
  /** The provider holds exactly one batch that is this job's (by its metadata or by its items' custom ids). */
  | { readonly status: "found"; readonly batchId: string }
  /** Nothing proves or disproves it yet (a candidate's items cannot be read before it ends): ask again later. */
  | { readonly status: "unresolved" }
  /** The provider's listing since the submission holds no batch of this job. Never a licence to submit again. */
  | { readonly status: "absent" };

/**
 * A provider's batch API (spec: model-jobs), the seam `@alma-harness/batch` submits through.
 * Contract:
 * - `validate` checks request support without I/O and throws `ProviderError` (`unsupported`).
 * - `submit` sends the items once, tagged with `jobId` where the wire carries metadata; it returns
 *   the provider's batch id, or throws `ProviderError`. A throw after the request left (a lost
 *   acknowledgement) is not a refusal: the caller reconciles with `find`, never calls `submit` again.
 * - `find` lists the provider's batches created at or after `since` (epoch ms) and matches this
 *   job's: by the `jobId` metadata, or by the exact set of `customIds` once a candidate's results
 *   can be read. Read-only.
 * - `poll` reads a batch's status; `results` reads an ended batch's item results (every item once,
 *   in any order). Both are read-only and may be repeated.
 * - `signal` aborts the transport. No SDK: `fetch` only, injectable.
 */
export interface ModelJobTransport {
  readonly id: string;
  readonly provider: string;
  validate(request: ModelRequest): void;
  submit(
    jobId: string,
    items: readonly ModelJobRequestItem[],
    signal?: AbortSignal,
  ): Promise<{ readonly batchId: string }>;
  find(
    jobId: string,
    customIds: readonly string[],
    since: number,
    signal?: AbortSignal,
  ): Promise<ModelJobFound>;
  poll(batchId: string, signal?: AbortSignal): Promise<ModelJobBatchStatus>;
  results(batchId: string, signal?: AbortSignal): Promise<readonly ModelJobItemResult[]>;
}
