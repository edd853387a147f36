import type { BudgetCapName, Routine, RoutingIntent, Scope } from "@alma-harness/core";

/**
 * A routine's work as a provider batch job would take it: one governed call's worth of input, its
 * scope, routing intent, profile and per-run cap, and a stable `customId` (the slot and attempt)
 * by which a lost submission is found again — never by submitting twice.
 */
export interface RoutineWork {
  readonly scope: Scope;
  readonly routineId: string;
  readonly slot: number;
  readonly attempt: number;
  /** `<routineId>@<slot ISO>#<attempt>`: the job's custom id. */
  readonly customId: string;
  readonly goal: string;
  readonly intent: RoutingIntent;
  readonly profile?: string;
  readonly cap: Routine["cap"];
}

/** What a collection found. `pending`: not done yet (the run goes back to `submitted`). */
export type RoutineJobResult =
  | { readonly status: "pending" }
  | {
      readonly status: "completed";
      readonly text: string;
      readonly costMicros: number;
      readonly turnId?: string;
      readonly capsCrossed?: readonly BudgetCapName[];
    }
  | { readonly status: "failed" }
  | { readonly status: "reconciliation_required" };

/**
 * The "submit work / collect it" seam of a routine whose `execution` is `job` (the provider batch
 * path). `@alma-harness/runtime`'s `routineJobs` puts `@alma-harness/batch`'s `ModelJobClient`
 * behind it; this package never talks to a provider. Contract:
 * - `submit` hands the work to one job and answers its id (or `refused`: nothing sent, nothing spent). It is called once per claimed slot and
 *   attempt, after the claim is durable. A throw cannot say whether the job exists: the run is
 *   recorded `reconciliation_required` (`job_uncertain`) and an operator looks the job up by
 *   `customId`; the runner never submits that slot again by itself.
 * - `collect` reads a job (it must not submit anything) and may be called any number of times: on
 *   every tick while the run is `submitted`, each under a fresh claim (`submitted` → `running`).
 *   A throw is a failed read: the run goes back to `submitted` for the next tick.
 * - A `completed` job's money settled through the governed receipts of the batch client; the cost
 *   and `capsCrossed` it answers are recorded on the run and its delivery as evidence.
 */
export interface RoutineJobs {
  submit(work: RoutineWork): Promise<RoutineJobSubmission>;
  collect(job: RoutineJobRef): Promise<RoutineJobResult>;
}

/**
 * What `submit` answers: the job's id, or `refused` — certainly nothing was sent and nothing spent
 * (the batch tier is unpriced, or the work's worst case does not fit under a block cap: the
 * zero-cost preflight). A refused run is `failed` (`budget_stopped`) at zero cost, as a turn's.
 */
export type RoutineJobSubmission =
  | { readonly status?: "submitted"; readonly jobId: string }
  | { readonly status: "refused"; readonly reason: "unpriced" | "cap" };

/** A submitted run's job as `collect` reads it; `cap` is the routine's per-run cap (the one its work was submitted under). */
export interface RoutineJobRef {
  readonly scope: Scope;
  readonly routineId: string;
  readonly slot: number;
  readonly jobId: string;
  readonly customId: string;
  readonly cap?: Routine["cap"];
}
