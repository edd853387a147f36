/**
 * `@alma-harness/batch/testing`: a scripted batch transport for tests and demos, in process, with
 * no network and no timing. It records every submission (so a test can prove a job was sent once),
 * keeps the batches it "created", and answers `find`, `poll` and `results` from them. Nothing in it
 * imports a test framework.
 */
import {
  type ModelJobBatchStatus,
  type ModelJobFound,
  type ModelJobItemResult,
  type ModelJobRequestItem,
  type ModelJobTransport,
  type ModelRequest,
  ProviderError,
} from "@alma-harness/core";

interface Batch {
  readonly id: string;
  readonly jobId: string;
  readonly items: readonly ModelJobRequestItem[];
  readonly createdAt: number;
  status: ModelJobBatchStatus;
  results: readonly ModelJobItemResult[];
}

/** What the next `submit` does: accept it, accept it and lose the acknowledgement, or refuse it before anything is created. */
export type SubmitScript = "accept" | "lose_ack" | { readonly refuse: ProviderError };

export class ScriptedBatchTransport implements ModelJobTransport {
  readonly id: string;
  readonly provider: string;
  /** Every `submit` call, in order (a job submitted once appears once). */
  readonly submissions: {
    readonly jobId: string;
    readonly items: readonly ModelJobRequestItem[];
  }[] = [];
  /** Every request `validate` saw. */
  readonly validated: ModelRequest[] = [];
  readonly #batches = new Map<string, Batch>();
  readonly #script: SubmitScript[] = [];
  readonly #now: () => number;
  /** Whether `find` can tell (a provider whose listing carries no metadata answers `unresolved` until the batch ends). */
  findable = true;

  constructor(
    opts: { readonly id?: string; readonly provider?: string; readonly now?: () => number } = {},
  ) {
    this.id = opts.id ?? "scripted-batch";
    this.provider = opts.provider ?? "scripted";
    this.#now = opts.now ?? (() => 0);
  }

  /** Scripts the next submissions (default: accept). */
  next(...script: SubmitScript[]): this {
    this.#script.push(...script);
    return this;
  }

  validate(request: ModelRequest): void {
    this.validated.push(request);
  }

  async submit(
    jobId: string,
    items: readonly ModelJobRequestItem[],
  ): Promise<{ readonly batchId: string }> {
    this.submissions.push({ jobId, items });
    const script = this.#script.shift() ?? "accept";
    if (typeof script === "object") throw script.refuse;
    const id = `batch_${this.#batches.size + 1}`;
    this.#batches.set(id, {
      id,
      jobId,
      items,
      createdAt: this.#now(),
      status: "in_progress",
      results: [],
    });
    if (script === "lose_ack")
      throw new ProviderError("the connection closed before the answer", {
        kind: "network",
        provider: this.provider,
      });
    return { batchId: id };
  }

  async find(jobId: string, customIds: readonly string[], since: number): Promise<ModelJobFound> {
    const wanted = [...customIds].sort().join(",");
    const mine = [...this.#batches.values()].filter(
      (b) =>
        b.createdAt >= since &&
        b.jobId === jobId &&
        b.items
          .map((i) => i.customId)
          .sort()
          .join(",") === wanted,
    );
    if (!this.findable && mine.every((b) => b.status !== "ended"))
      return { status: mine.length > 0 || this.#batches.size > 0 ? "unresolved" : "absent" };
    if (mine.length === 1) return { status: "found", batchId: (mine[0] as Batch).id };
    return mine.length === 0 ? { status: "absent" } : { status: "unresolved" };
  }

  async poll(batchId: string): Promise<ModelJobBatchStatus> {
    return this.#batch(batchId).status;
  }

  async results(batchId: string): Promise<readonly ModelJobItemResult[]> {
    const batch = this.#batch(batchId);
    if (batch.status !== "ended")
      throw new ProviderError(`batch ${batchId} has not ended`, {
        kind: "invalid_request",
        provider: this.provider,
        status: 400,
      });
    return batch.results;
  }

  /** Ends a batch with each item's result (`answer` maps an item to it). */
  end(batchId: string, answer: (item: ModelJobRequestItem) => ModelJobItemResult): void {
    const batch = this.#batch(batchId);
    batch.results = batch.items.map(answer);
    batch.status = "ended";
  }

  /** Fails a whole batch (the provider ran nothing of it). */
  fail(batchId: string): void {
    this.#batch(batchId).status = "failed";
  }

  /** The batches created so far, by id. */
  get batches(): readonly string[] {
    return [...this.#batches.keys()];
  }

  #batch(batchId: string): Batch {
    const batch = this.#batches.get(batchId);
    if (!batch)
      throw new ProviderError(`no batch ${batchId}`, {
        kind: "not_found",
        provider: this.provider,
        status: 404,
      });
    return batch;
  }
}

/** A `succeeded` result answering `text` with `usage` (at the batch tier). */
export function succeeded(
  customId: string,
  text: string,
  inputTokens: number,
  outputTokens: number,
): ModelJobItemResult {
  return {
    customId,
    type: "succeeded",
    stopReason: "end_turn",
    text,
    toolCalls: [],
    usage: { inputTokens, outputTokens, serviceTier: "batch" },
  };
}
