import type { LoopLimits } from "./engine.js";
import { EngineConfigError } from "./errors.js";

export const DEFAULT_FINAL_ANSWER_NOTICE =
  "This is your last step: answer the person now with what you have. Tools will not run.";
export const DEFAULT_TIME_NOTICE = "Time is almost up: answer the person now with what you have. Tools will not run.";

export interface ResolvedLimits {
  readonly maxCalls: number;
  readonly maxSteps: number;
  readonly maxParallelToolCalls: number;
  readonly maxToolCalls: number | undefined;
  readonly maxModelTokens: number | undefined;
  readonly roundTimeoutMs: number;
  readonly stepReserveMs: number;
  readonly finalAnswerNotice: string | undefined;
  readonly maxDelegateDepth: number;
  readonly delegateMaxSteps: number;
  readonly permissionTimeoutMs: number;
}

function positive(name: string, value: number | undefined, fallback: number, max = 1_000_000): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new EngineConfigError(`limits.${name} must be an integer 1-${max}`);
  return v;
}

export function resolveLimits(limits: LoopLimits): ResolvedLimits {
  if (!limits || typeof limits !== "object") throw new EngineConfigError("limits are required ({maxCalls})");
  const maxCalls = positive("maxCalls", limits.maxCalls, Number.NaN, 1000);
  const roundTimeoutMs = positive("roundTimeoutMs", limits.roundTimeoutMs, 60_000, 600_000);
  if (limits.finalAnswerNotice !== undefined && (typeof limits.finalAnswerNotice !== "string" || limits.finalAnswerNotice.length === 0)) {
    throw new EngineConfigError("limits.finalAnswerNotice must be a non-empty string");
  }
  return {
    maxCalls,
    maxSteps: positive("maxSteps", limits.maxSteps, maxCalls, 1000),
    maxParallelToolCalls: positive("maxParallelToolCalls", limits.maxParallelToolCalls, 1, 64),
    maxToolCalls: limits.maxToolCalls === undefined ? undefined : positive("maxToolCalls", limits.maxToolCalls, 1, 100_000),
    maxModelTokens: limits.maxModelTokens === undefined ? undefined : positive("maxModelTokens", limits.maxModelTokens, 1, 1_000_000_000),
    roundTimeoutMs,
    stepReserveMs: positive("stepReserveMs", limits.stepReserveMs, roundTimeoutMs, 600_000),
    finalAnswerNotice: limits.finalAnswerNotice,
    maxDelegateDepth: positive("maxDelegateDepth", limits.maxDelegateDepth, 2, 8),
    delegateMaxSteps: positive("delegateMaxSteps", limits.delegateMaxSteps, 4, 100),
    permissionTimeoutMs: positive("permissionTimeoutMs", limits.permissionTimeoutMs, 300_000, 3_600_000),
  };
}
