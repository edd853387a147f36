import {
  deepFreeze,
  type ModelChoice,
  type ModelRequest,
  normalizeModelChoice,
  type ReasoningEffort,
  type UncertainCause,
} from "@alma-harness/core";
import { checkpoint } from "./cancel.js";
import { CallUnansweredError, UncertainTurnError } from "./errors.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";
import {
  type Rejection,
  rejectionError,
  type StepCall,
  type StepDone,
  type StepResult,
} from "./step-results.js";

export interface AttemptOptions {
  /** A settled rejection the caller reacts to itself (the main step: a context refusal, a released pre-stream refusal). */
  readonly keeps?: (rejection: Rejection) => boolean;
  /** A settled call without usable output (a summary's): the cause, or nothing when it is usable. */
  readonly unusable?: (done: StepDone) => UncertainCause | undefined;
  /** The task the policy is asked again with (the main intent's, or the child's kind). */
  readonly task?: string;
}

/** A call out of attempts (spec: call-retry): the last failure's cause and why no attempt follows. */
export interface Unanswered {
  readonly status: "unanswered";
  readonly cause: UncertainCause;
  readonly reason: string;
  readonly error?: unknown;
}

/** How a call with its attempts ended, as data. Only uncertainty is thrown. */
export type AttemptResult = StepResult | Unanswered;

/** An unanswered call where the caller cannot take one (a summary): uncertain, with its cause. */
export function unansweredError(u: Unanswered): CallUnansweredError {
  return new CallUnansweredError(u.cause, u.reason, u.error);
}

/**
 * One model call with its attempts (spec: call-retry). Without `callAttempts` it is one governed
 * step, as before. With it, a failure another attempt may mend (the governed call's `retry` class,
 * a proven-unsent store failure, a settled rejection the caller does not keep, an unusable output)
 * is recorded on `state.failures` and tried again as a new governed call under the same root (a new
 * operation id, its own claim, journal and payment), while attempts, `maxCalls` and the answer-by
 * time are left, with no backoff. Before each retry the policy is asked again (`retryChoice`). Out
 * of attempts, or at a refused request, it returns `unanswered` with the last cause.
 */
export async function attemptStep(
  calls: ModelCalls,
  state: TurnState,
  call: StepCall,
  signal: AbortSignal,
  opts: AttemptOptions = {},
): Promise<AttemptResult> {
  const max = calls.limits.callAttempts;
  let { choice, request } = call;
  for (let attempt = 1; ; attempt++) {
    const round = { ...call, choice, request };
    const tried = await tryOnce(calls, round, signal, opts, max !== undefined);
    if ("result" in tried) return tried.result;
    state.failures.push({ kind: call.kind, cause: tried.cause });
    const end = endOfAttempts(calls, state, call, tried.cause, attempt, max as number);
    if (end) return { status: "unanswered", cause: tried.cause, reason: end, error: tried.error };
    checkpoint(signal);
    const next = retryChoice(calls, call, choice, request, attempt + 1, tried.cause, opts.task);
    if ("status" in next) return next;
    ({ choice, request } = next);
  }
}

/** One attempt: its result, or the cause another attempt may mend (only when retrying). */
async function tryOnce(
  calls: ModelCalls,
  call: StepCall,
  signal: AbortSignal,
  opts: AttemptOptions,
  retrying: boolean,
): Promise<
  { readonly result: AttemptResult } | { readonly cause: UncertainCause; readonly error?: unknown }
> {
  let result: StepResult;
  try {
    result = await calls.round(call, signal);
  } catch (error) {
    const cause = retrying ? thrownRetryCause(error, call) : undefined;
    if (cause === undefined) throw error;
    return { cause, error };
  }
  if (result.status === "settled") {
    const unusable = opts.unusable?.(result.done);
    if (unusable === undefined) return { result };
    if (!retrying)
      throw new UncertainTurnError(unusable, `the ${call.kind} call gave no usable output`);
    return { cause: unusable };
  }
  if (result.status === "rejected" && retrying && !opts.keeps?.(result.rejection)) {
    const error = rejectionError(result.rejection);
    return { cause: error.cause_, error };
  }
  return { result };
}

/** The cause a thrown attempt may be tried again for, or nothing (it is thrown as it is). */
function thrownRetryCause(error: unknown, call: StepCall): UncertainCause | undefined {
  if (!(error instanceof UncertainTurnError)) return undefined;
  if (error.cause_ === `call:${call.kind}:request_invalid`) return error.cause_;
  return error.attempt === "retry" ? error.cause_ : undefined;
}

/** Why no further attempt follows, or nothing when one may. */
function endOfAttempts(
  calls: ModelCalls,
  state: TurnState,
  call: StepCall,
  cause: UncertainCause,
  attempt: number,
  max: number,
): string | undefined {
  // The same request is refused again: no attempt can mend it (spec: refused-request).
  if (cause === `call:${call.kind}:request_invalid`)
    return "the request was refused before dispatch";
  if (attempt >= max) return `the ${call.kind} call failed ${attempt} times`;
  if (state.callsUsed >= calls.limits.maxCalls) return "no call is left for another attempt";
  const by = calls.answerByAt;
  if (by !== undefined && calls.rec.now() >= by) return "the answer-by time has passed";
  return undefined;
}

const EFFORT: Readonly<Record<ReasoningEffort, number>> = { low: 1, medium: 2, high: 3 };
const effort = (r: ReasoningEffort | undefined) => (r === undefined ? 0 : EFFORT[r]);

/**
 * The retry's route (spec: retry-routing): the policy asked again with the call's tier, sensitivity
 * and task plus `attempt` and `previousCause`. It may lower the reasoning; anything else it changes
 * (client, model, service tier, cache, output ceiling), more reasoning, or a throw ends the call
 * with `call:<kind>:routing_unavailable`. The request keeps everything but the reasoning.
 */
function retryChoice(
  calls: ModelCalls,
  call: StepCall,
  prev: ModelChoice,
  request: ModelRequest,
  attempt: number,
  previousCause: UncertainCause,
  task: string | undefined,
): Unanswered | { readonly choice: ModelChoice; readonly request: ModelRequest } {
  const cause: UncertainCause = `call:${call.kind}:routing_unavailable`;
  let next: ModelChoice;
  try {
    next = normalizeModelChoice(
      calls.resolve({
        tier: call.tier,
        sensitivity: call.sensitivity,
        ...(task !== undefined ? { task } : {}),
        attempt,
        previousCause,
      }),
    );
  } catch (error) {
    return { status: "unanswered", cause, reason: "the policy refused the retry's route", error };
  }
  const same =
    next.clientId === prev.clientId &&
    next.model === prev.model &&
    next.serviceTier === prev.serviceTier &&
    next.maxOutputTokens === prev.maxOutputTokens &&
    JSON.stringify(next.cache) === JSON.stringify(prev.cache) &&
    effort(next.reasoning) <= effort(prev.reasoning);
  if (!same)
    return {
      status: "unanswered",
      cause,
      reason: "the retry's route asked for more than the admitted choice",
    };
  const { reasoning: _dropped, ...rest } = request;
  const retried = deepFreeze<ModelRequest>({
    ...rest,
    ...(next.reasoning ? { reasoning: next.reasoning } : {}),
  });
  return { choice: next, request: retried };
}
