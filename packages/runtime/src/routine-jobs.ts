import { createHash } from "node:crypto";
import type { ModelJobClient, ModelJobCollection } from "@alma-harness/batch";
import { type CapInput, type Routine, routineSessionId } from "@alma-harness/core";
import type {
  RoutineJobRef,
  RoutineJobResult,
  RoutineJobs,
  RoutineJobSubmission,
  RoutineWork,
} from "@alma-harness/schedule";

/**
 * The model job client(s) behind a routine's jobs: one client (its own caps bound every job), or a
 * factory of clients by per-turn cap (`(caps) => modelJobs({ ...config, caps: { ...hostCaps, ...caps } })`),
 * so a routine's per-run cap is the job's `perTurnUsd`, enforced by the client's own zero-cost
 * preflight — the same rule as a turn's cap, never re-implemented here. One client per distinct cap, kept.
 */
export type RoutineJobClients =
  | ModelJobClient
  | ((caps: { readonly perTurnUsd: CapInput }) => ModelJobClient);

export interface RoutineJobsOptions {
  /** The system prompt of every routine's item (the host's nightly instructions). */
  readonly system: string;
  /** Lowers the route's output ceiling for a routine's item (never raises it). */
  readonly maxOutputTokens?: number;
  /**
   * The item's user message for a run (default: the routine's goal): the host's data for the work
   * (a batch item has no tools, so what it should read goes here). It is sent to the provider under
   * the routine's intent and sensitivity. It runs before the client is called; a throw fails the
   * submission as uncertain (`job_uncertain`, the operator's), though nothing was sent.
   */
  readonly input?: (work: RoutineWork) => string | Promise<string>;
}

/** A routine's job has one item, under this custom id. */
const ITEM = "routine";

/** The job id of a run's work: derived from its custom id (`<routineId>@<slot ISO>#<attempt>`), so a retry of the same attempt names the same job and the client never submits it twice. */
export function routineJobId(customId: string): string {
  return `routine-${createHash("sha256").update(customId, "utf8").digest("hex").slice(0, 48)}`;
}

function clients(source: RoutineJobClients): (cap: Routine["cap"] | undefined) => ModelJobClient {
  if (typeof source !== "function") return () => source;
  const made = new Map<string, ModelJobClient>();
  return (cap) => {
    if (!cap) throw new TypeError("routineJobs: a capped client factory needs the routine's cap");
    const key = `${cap.usd}:${cap.onExceeded}`;
    let client = made.get(key);
    if (!client) {
      client = source({ perTurnUsd: { usd: cap.usd, onExceeded: cap.onExceeded } });
      made.set(key, client);
    }
    return client;
  };
}

/** A collection as the schedule reads it: the one item's text, its receipt's cost and crossings. */
function resultOf(collection: ModelJobCollection): RoutineJobResult {
  if (collection.status === "pending") return { status: "pending" };
  if (collection.status !== "collected") return { status: "reconciliation_required" };
  const item = collection.items.find((i) => i.customId === ITEM);
  if (!item?.answer) return { status: "failed" };
  return {
    status: "completed",
    text: item.answer.text,
    costMicros: item.receipt.usdMicros,
    ...(item.receipt.capsCrossed.length > 0 ? { capsCrossed: item.receipt.capsCrossed } : {}),
  };
}

/**
 * `RoutineJobs` over `@alma-harness/batch`'s `ModelJobClient`: a run's work is one job of one item
 * (the routine's scope and intent, its goal as the user message, the options' system prompt and
 * output ceiling) in the run's own session (`routineSessionId`). Pricing at the batch tier, the
 * claim before egress, settlement and trails are the client's; `submit` never resubmits a known job
 * (the id is the custom id's), and `collect` only reads and settles. A routine's profile names
 * tools: a batch item carries none, so it is not used on this path.
 */
export function routineJobs(source: RoutineJobClients, options: RoutineJobsOptions): RoutineJobs {
  if (
    options === null ||
    typeof options !== "object" ||
    typeof options.system !== "string" ||
    options.system.length === 0
  ) {
    throw new TypeError("routineJobs needs options with a non-empty system prompt");
  }
  if (options.input !== undefined && typeof options.input !== "function")
    throw new TypeError("routineJobs: input must be a function");
  const clientFor = clients(source);
  return Object.freeze({
    async submit(work: RoutineWork): Promise<RoutineJobSubmission> {
      const jobId = routineJobId(work.customId);
      const text = options.input ? await options.input(work) : work.goal;
      const answer = await clientFor(work.cap).submit({
        jobId,
        items: [
          {
            customId: ITEM,
            scope: work.scope,
            sessionId: routineSessionId(work.routineId, work.slot),
            intent: work.intent,
            system: options.system,
            messages: [{ role: "user", blocks: [{ type: "text", text }] }],
            ...(options.maxOutputTokens !== undefined
              ? { maxOutputTokens: options.maxOutputTokens }
              : {}),
          },
        ],
      });
      if (answer.status === "refused") return { status: "refused", reason: answer.reason };
      // Submitted, in progress, cancelled or uncertain: the job exists under this id; `collect` answers which.
      return { jobId };
    },
    async collect(job: RoutineJobRef): Promise<RoutineJobResult> {
      return resultOf(await clientFor(job.cap).collect(job.scope, job.jobId));
    },
  });
}
