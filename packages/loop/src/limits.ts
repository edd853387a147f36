import type { Block } from "@alma-harness/core";
import type { LoopLimits } from "./engine.js";
import type { BudgetMetric, TurnResult } from "./result.js";
import { EngineConfigError } from "./errors.js";

export const DEFAULT_FINAL_ANSWER_NOTICE =
  "This is your last step: answer the person now with what you have. Tools will not run.";
export const DEFAULT_TIME_NOTICE =
  "Time is almost up: answer the person now with what you have. Tools will not run.";

/** The most attempts one model call may have (spec: call-retry). */
export const MAX_CALL_ATTEMPTS = 5;

export interface ResolvedLimits {
  readonly maxCalls: number;
  readonly maxSteps: number;
  readonly maxParallelToolCalls: number;
  readonly maxToolCalls: number | undefined;
  readonly maxModelTokens: number | undefined;
  readonly roundTimeoutMs: number;
  readonly stepReserveMs: number;
  readonly finalAnswerNotice: string | undefined;
  /** Attempts of one model call (1-5); undefined: a failed call is uncertain (spec: call-retry). */
  readonly callAttempts: number | undefined;
  readonly maxDelegateDepth: number;
  readonly delegateMaxSteps: number;
  readonly permissionTimeoutMs: number;
}

function positive(
  name: string,
  value: number | undefined,
  fallback: number,
  max = 1_000_000,
): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max)
    throw new EngineConfigError(`limits.${name} must be an integer 1-${max}`);
  return v;
}

/** `roundTimeoutMs` under either of its names (`stepTimeoutMs` is the seed's). */
function roundTimeoutOf(limits: LoopLimits): number | undefined {
  const { roundTimeoutMs: present, stepTimeoutMs: seed } = limits;
  if (present !== undefined && seed !== undefined && present !== seed)
    throw new EngineConfigError(
      "limits.stepTimeoutMs is limits.roundTimeoutMs: give one, or both equal",
    );
  return present ?? seed;
}

export function resolveLimits(limits: LoopLimits): ResolvedLimits {
  if (!limits || typeof limits !== "object")
    throw new EngineConfigError("limits are required ({maxCalls})");
  const maxCalls = positive("maxCalls", limits.maxCalls, Number.NaN, 1000);
  const roundTimeoutMs = positive("roundTimeoutMs", roundTimeoutOf(limits), 60_000, 600_000);
  if (
    limits.finalAnswerNotice !== undefined &&
    (typeof limits.finalAnswerNotice !== "string" || limits.finalAnswerNotice.length === 0)
  ) {
    throw new EngineConfigError("limits.finalAnswerNotice must be a non-empty string");
  }
  return Object.freeze({
    maxCalls,
    maxSteps: positive("maxSteps", limits.maxSteps, maxCalls, 1000),
    maxParallelToolCalls: positive("maxParallelToolCalls", limits.maxParallelToolCalls, 1, 64),
    maxToolCalls:
      limits.maxToolCalls === undefined
        ? undefined
        : positive("maxToolCalls", limits.maxToolCalls, 1, 100_000),
    maxModelTokens:
      limits.maxModelTokens === undefined
        ? undefined
        : positive("maxModelTokens", limits.maxModelTokens, 1, 1_000_000_000),
    roundTimeoutMs,
    stepReserveMs: positive("stepReserveMs", limits.stepReserveMs, roundTimeoutMs, 600_000),
    finalAnswerNotice: limits.finalAnswerNotice,
    callAttempts:
      limits.callAttempts === undefined
        ? undefined
        : positive("callAttempts", limits.callAttempts, 1, MAX_CALL_ATTEMPTS),
    maxDelegateDepth: positive("maxDelegateDepth", limits.maxDelegateDepth, 2, 8),
    delegateMaxSteps: positive("delegateMaxSteps", limits.delegateMaxSteps, 4, 100),
    permissionTimeoutMs: positive(
      "permissionTimeoutMs",
      limits.permissionTimeoutMs,
      300_000,
      3_600_000,
    ),
  });
}

/** How a turn ended, before the finalizer adds the totals. */
export type Ending = Omit<
  TurnResult,
  "turnId" | "usage" | "costMicros" | "receipts" | "toolCalls" | "warnings"
>;
/** Why the coming main step is the last one: no call after it, no step after it, or no time. */
export type LastKind = "call" | "step" | "time";

/**
 * Whether the coming main step is the last. Calls win a tie with steps (a tie reports `callLimit`);
 * time only counts after the first step, when less than `stepReserveMs` is left before the
 * answer-by time (the deadline when the turn has none).
 */
export function lastKind(
  limits: ResolvedLimits,
  used: { readonly callsUsed: number; readonly steps: number },
  now: number,
  answerByAt: number | undefined,
): LastKind | undefined {
  if (limits.maxCalls - used.callsUsed === 1) return "call";
  if (limits.maxSteps - used.steps === 1) return "step";
  if (answerByAt !== undefined && used.steps > 0 && now + limits.stepReserveMs >= answerByAt)
    return "time";
  return undefined;
}

/** The time every call of the turn ends by (spec: call-retry): the answer-by time, else the deadline. */
export function answerBy(input: {
  readonly answerByAt?: number;
  readonly deadlineAt?: number;
}): number | undefined {
  return input.answerByAt ?? input.deadlineAt;
}

/** The notice a last step carries when it advertises tools; `finalAnswerNotice` replaces every text. */
export function noticeFor(limits: ResolvedLimits, kind: LastKind): string {
  return (
    limits.finalAnswerNotice ??
    (kind === "time" ? DEFAULT_TIME_NOTICE : DEFAULT_FINAL_ANSWER_NOTICE)
  );
}

export function limitEnding(
  limits: ResolvedLimits,
  kind: LastKind,
  answered: boolean,
  stopReason: TurnResult["stopReason"],
  reply: readonly Block[],
): Ending {
  if (kind === "call")
    return {
      reply,
      stopReason,
      terminalReason: "call_limit",
      callLimit: { maxCalls: limits.maxCalls, answered },
    };
  if (kind === "step")
    return {
      reply,
      stopReason,
      terminalReason: "step_limit",
      stepLimit: { maxSteps: limits.maxSteps, answered },
    };
  return { reply, stopReason, terminalReason: "time_limit", timeLimit: { answered } };
}

export function budgetEnding(metric: BudgetMetric, stopReason: TurnResult["stopReason"]): Ending {
  return { reply: [], stopReason, terminalReason: "budget", budget: { metric, answered: false } };
}

/** The turn's model tokens are spent: no further model or tool unit may start. */
export function tokensSpent(limits: ResolvedLimits, modelTokens: number): boolean {
  const max = limits.maxModelTokens;
  return max !== undefined && modelTokens >= max;
}
