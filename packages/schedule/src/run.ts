import type { ConversationRunner, ConversationView } from "@alma-harness/conversation";
import {
  type BudgetCapName,
  type OutputSink,
  type Routine,
  type RoutineFinish,
  type RoutineRun,
  type RoutineRunStore,
  ValidationError,
} from "@alma-harness/core";
import type { RoutineJobResult, RoutineJobs, RoutineJobSubmission } from "./jobs.js";

/** The governed runner a routine's turn runs through, under the routine's own per-run cap (its `perTurnUsd`). */
export type RoutineTurns = (cap: Routine["cap"]) => Pick<ConversationRunner, "runTurn">;

export interface RunDeps {
  readonly runs: RoutineRunStore;
  readonly sink: OutputSink;
  readonly turns: RoutineTurns;
  readonly jobs?: RoutineJobs;
  readonly owner: string;
  readonly now: () => number;
}

const CAP_ORDER: readonly BudgetCapName[] = ["perTurnUsd", "perSessionUsd", "perTenantDayUsd"];

/** `<routineId>@<slot ISO>#<attempt>`: the delivery's and the job's stable id. */
export function deliveryId(run: Pick<RoutineRun, "routineId" | "slot" | "attempt">): string {
  return `${run.routineId}@${new Date(run.slot).toISOString()}#${run.attempt}`;
}

type End = Omit<RoutineFinish, "scope" | "routineId" | "slot" | "owner" | "attempt" | "at">;

function finish(deps: RunDeps, run: RoutineRun, end: End): Promise<RoutineRun> {
  return deps.runs.finish({
    scope: run.scope,
    routineId: run.routineId,
    slot: run.slot,
    owner: run.owner ?? deps.owner,
    attempt: run.attempt,
    at: deps.now(),
    ...end,
  });
}

/** The caps a turn's receipts crossed, each once, in the vocabulary's order (empty: none). */
function capsOf(
  view: Extract<ConversationView, { status: "completed" }>,
): readonly BudgetCapName[] {
  const crossed = new Set(view.result.receipts.flatMap((r) => r.capsCrossed));
  return CAP_ORDER.filter((c) => crossed.has(c));
}

function replyText(view: Extract<ConversationView, { status: "completed" }>): string {
  return view.result.reply
    .flatMap((b) => (b.type === "text" ? [b.text] : []))
    .join("")
    .trim();
}

/** Delivers a result and ends the run `completed`, or `reconciliation_required` when the sink threw (it may have it). */
async function deliver(
  deps: RunDeps,
  routine: Routine,
  run: RoutineRun,
  result: {
    text: string;
    costMicros: number;
    turnId?: string;
    capsCrossed: readonly BudgetCapName[];
  },
): Promise<RoutineRun> {
  const money = {
    costMicros: result.costMicros,
    capsCrossed: result.capsCrossed,
    ...(result.turnId ? { turnId: result.turnId } : {}),
  };
  try {
    await deps.sink.deliver({
      scope: run.scope,
      routineId: run.routineId,
      slot: run.slot,
      deliveryId: deliveryId(run),
      destination: routine.destination,
      text: result.text,
      costMicros: result.costMicros,
      ...(result.turnId ? { turnId: result.turnId } : {}),
      ...(result.capsCrossed.length > 0 ? { capsCrossed: result.capsCrossed } : {}),
      ...(run.late ? { late: true as const } : {}),
    });
  } catch {
    return finish(deps, run, {
      state: "reconciliation_required",
      reason: "delivery_failed",
      ...money,
    });
  }
  const delivery = {
    destination: routine.destination,
    status: "delivered" as const,
    at: deps.now(),
    capsCrossed: result.capsCrossed,
  };
  return finish(deps, run, { state: "completed", ...money, delivery });
}

/**
 * Runs a claimed slot as one governed turn through the conversation runner (scope, routing,
 * pricing, caps, journal and trails are the runner's), under the routine's cap, then delivers it.
 * Every way the turn can end maps to one recorded end; none retries. The turn's session is the
 * run's own, its key the attempt's, so a read-back after a lost claim acknowledgement replays it.
 */
export async function runTurnSlot(
  deps: RunDeps,
  routine: Routine,
  run: RoutineRun,
): Promise<RoutineRun> {
  let view: ConversationView;
  try {
    view = await deps.turns(routine.cap).runTurn({
      scope: run.scope,
      sessionId: run.sessionId,
      idempotencyKey: `attempt-${run.attempt}`,
      input: routine.goal,
      intent: routine.intent,
      trigger: "routine",
      ...(routine.profile !== undefined ? { toolProfile: routine.profile } : {}),
    });
  } catch (error) {
    // Invalid input is refused before admission: certainly nothing ran. Anything else may have.
    if (error instanceof ValidationError)
      return finish(deps, run, { state: "failed", reason: "invalid_request" });
    return finish(deps, run, { state: "reconciliation_required", reason: "turn_uncertain" });
  }
  if (view.status === "not_admitted")
    return finish(deps, run, { state: "failed", reason: "not_admitted" });
  if (view.status === "unavailable")
    return finish(deps, run, { state: "failed", reason: "unavailable" });
  if (view.status !== "completed")
    return finish(deps, run, { state: "reconciliation_required", reason: "turn_uncertain" });
  const capsCrossed = capsOf(view);
  const money = { costMicros: view.result.costMicros, capsCrossed, turnId: view.result.turnId };
  const text = replyText(view);
  if (view.result.budget && !view.result.budget.answered)
    return finish(deps, run, { state: "failed", reason: "budget_stopped", ...money });
  if (text.length === 0)
    return finish(deps, run, { state: "failed", reason: "no_reply", ...money });
  return deliver(deps, routine, run, { text, ...money });
}

/** Hands a claimed slot's work to a provider batch job and records it `submitted` with the job's id. */
export async function submitSlot(
  deps: RunDeps,
  routine: Routine,
  run: RoutineRun,
): Promise<RoutineRun> {
  if (!deps.jobs) return finish(deps, run, { state: "failed", reason: "job_failed" });
  let submitted: RoutineJobSubmission;
  try {
    submitted = await deps.jobs.submit({
      scope: run.scope,
      routineId: run.routineId,
      slot: run.slot,
      attempt: run.attempt,
      customId: deliveryId(run),
      goal: routine.goal,
      intent: routine.intent,
      cap: routine.cap,
      ...(routine.profile !== undefined ? { profile: routine.profile } : {}),
    });
  } catch {
    return finish(deps, run, { state: "reconciliation_required", reason: "job_uncertain" });
  }
  // The zero-cost preflight refused it (unpriced batch tier, or over a block cap): nothing was sent.
  if (submitted.status === "refused")
    return finish(deps, run, { state: "failed", reason: "budget_stopped", costMicros: 0 });
  return finish(deps, run, {
    state: "submitted",
    submission: { jobId: submitted.jobId, submittedAt: deps.now() },
  });
}

/** Collects a `submitted` run taken for collection: pending goes back to `submitted`; a result is delivered. */
export async function collectSlot(
  deps: RunDeps,
  routine: Routine,
  run: RoutineRun,
): Promise<RoutineRun> {
  const submission = run.submission;
  if (!deps.jobs || !submission) return finish(deps, run, { state: "submitted" });
  let result: RoutineJobResult;
  try {
    result = await deps.jobs.collect({
      scope: run.scope,
      routineId: run.routineId,
      slot: run.slot,
      jobId: submission.jobId,
      customId: deliveryId(run),
      cap: routine.cap,
    });
  } catch {
    return finish(deps, run, { state: "submitted" });
  }
  if (result.status === "pending") return finish(deps, run, { state: "submitted" });
  if (result.status === "failed")
    return finish(deps, run, { state: "failed", reason: "job_failed" });
  if (result.status === "reconciliation_required")
    return finish(deps, run, { state: "reconciliation_required", reason: "job_uncertain" });
  const capsCrossed = CAP_ORDER.filter((c) => result.capsCrossed?.includes(c));
  if (result.text.trim().length === 0)
    return finish(deps, run, {
      state: "failed",
      reason: "no_reply",
      costMicros: result.costMicros,
      capsCrossed,
    });
  return deliver(deps, routine, run, {
    text: result.text.trim(),
    costMicros: result.costMicros,
    capsCrossed,
    ...(result.turnId ? { turnId: result.turnId } : {}),
  });
}
