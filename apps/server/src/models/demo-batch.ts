import {
  type ModelJobBatchStatus,
  type ModelJobFound,
  type ModelJobItemResult,
  type ModelJobRequestItem,
  type ModelJobTransport,
  type ModelRequest,
  ProviderError,
} from "@alma-harness/core";
import { usageOf } from "./demo.js";

export const DEMO_BATCH_ID = "demo-batch";

interface DemoBatch {
  readonly jobId: string;
  readonly items: readonly ModelJobRequestItem[];
  readonly createdAt: number;
  polls: number;
}

/** The last user text of a request (the routine's goal). */
function askedFor(request: ModelRequest): string {
  const last = [...request.messages].reverse().find((m) => m.role === "user");
  return (last?.blocks ?? [])
    .flatMap((b) => (b.type === "text" ? [b.text] : []))
    .join(" ")
    .trim();
}

/**
 * The deterministic summary an item gets: what was asked (its first sentence), the counts of the
 * appointment lines it was given (`- … booked` / `- … cancelled`), and a label saying who wrote it.
 */
export function demoSummary(request: ModelRequest): string {
  const prompt = askedFor(request);
  const asked = prompt.split(/(?<=[.:])\s/)[0] ?? "";
  const booked = prompt.split("\n").filter((l) => /^- .* booked$/.test(l)).length;
  const cancelled = prompt.split("\n").filter((l) => /^- .* cancelled$/.test(l)).length;
  return `Offline demo summary (batch job). Asked: ${asked.slice(0, 200)} Given: ${booked} booked, ${cancelled} cancelled. A real provider writes the staff's three lines here.`;
}

/**
 * The offline demo's batch API, in process, with no network and no timers: a batch is
 * `in_progress` on its first poll and `ended` from the second (so a routine's run is submitted on
 * one tick, pending on the next, collected on a later one), each item answered with `demoSummary`
 * and the demo model's token counts at the batch tier. It keeps its batches in memory: a batch this
 * process did not create (the host restarted) polls `failed` — the provider ran nothing of it, so
 * each item settles at zero and the run ends `failed` (`job_failed`), never resubmitted.
 */
export class DemoBatchTransport implements ModelJobTransport {
  readonly id = DEMO_BATCH_ID;
  readonly provider = "offline-demo";
  readonly #batches = new Map<string, DemoBatch>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** How many batches were submitted to the demo. */
  get submitted(): number {
    return this.#batches.size;
  }

  validate(request: ModelRequest): void {
    if (request.tools.length > 0)
      throw new ProviderError("the demo batch API answers text items only", {
        kind: "unsupported",
        provider: this.provider,
      });
  }

  async submit(
    jobId: string,
    items: readonly ModelJobRequestItem[],
  ): Promise<{ readonly batchId: string }> {
    const batchId = `demo_batch_${this.#batches.size + 1}`;
    this.#batches.set(batchId, { jobId, items, createdAt: this.#now(), polls: 0 });
    return { batchId };
  }

  async find(jobId: string, _customIds: readonly string[], since: number): Promise<ModelJobFound> {
    const mine = [...this.#batches.entries()].filter(
      ([, b]) => b.jobId === jobId && b.createdAt >= since,
    );
    if (mine.length === 1) return { status: "found", batchId: (mine[0] as [string, DemoBatch])[0] };
    return mine.length === 0 ? { status: "absent" } : { status: "unresolved" };
  }

  async poll(batchId: string): Promise<ModelJobBatchStatus> {
    const batch = this.#batches.get(batchId);
    if (!batch) return "failed";
    batch.polls += 1;
    return batch.polls >= 2 ? "ended" : "in_progress";
  }

  async results(batchId: string): Promise<readonly ModelJobItemResult[]> {
    const batch = this.#batches.get(batchId);
    if (!batch || batch.polls < 2)
      throw new ProviderError(`batch ${batchId} has not ended`, {
        kind: "invalid_request",
        provider: this.provider,
        status: 400,
      });
    return batch.items.map(({ customId, request }) => {
      const text = demoSummary(request);
      return {
        customId,
        type: "succeeded",
        stopReason: "end_turn",
        text,
        toolCalls: [],
        usage: { ...usageOf(request, text), serviceTier: "batch" },
      };
    });
  }
}
