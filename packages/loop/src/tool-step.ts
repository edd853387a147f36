import {
  replyBlocks,
  type StreamToolCall,
  type ToolResultBlock,
  trailJoin,
  trailKind,
} from "@alma-harness/core";
import { answerUnrun, dispatchCalls, dispatchStep } from "./dispatch.js";
import type { TurnEnv } from "./env.js";
import { InterruptedDispatch } from "./interrupted.js";
import {
  budgetEnding,
  type Ending,
  limitEnding,
  type ResolvedLimits,
  tokensSpent,
} from "./limits.js";
import { CALL_MODEL, type CallProgress, finish, type Next, type RunTools } from "./next.js";
import type { Recorder } from "./recorder.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";
import type { ToolRun } from "./tool-run.js";
import { argumentsOf } from "@alma-harness/execution";

/**
 * The tool stage: runs a main step's tool calls (or answers them as not run), then the next step
 * or the ending.
 * Every call gets exactly one result, in the model's order, appended as one message after the
 * assistant message that holds the calls, so the log never holds a dangling call.
 */
export async function toolStage(
  env: TurnEnv,
  state: TurnState,
  models: ModelCalls,
  step: RunTools,
): Promise<Next> {
  const run = toolRun(env, state, models);
  const ran = await runTools(env, run, step);
  if ("park" in ran) return { kind: "park", tools: { ...step, progress: ran.park } };
  return ran.ending ? finish(ran.ending) : CALL_MODEL;
}

/** What running the turn's calls reads of it (see `ToolRun`). */
function toolRun(env: TurnEnv, state: TurnState, calls: ModelCalls): ToolRun {
  const { engine, input } = env;
  return {
    rec: env.rec,
    state,
    calls,
    grant: env.grant,
    hooks: engine.hooks,
    permissions: engine.permissions,
    limits: env.limits,
    clock: engine.clock,
    sessionId: input.sessionId,
    facts: input.facts,
    park: engine.park,
    dispatch: dispatchCalls,
  };
}

async function runTools(
  env: TurnEnv,
  run: ToolRun,
  { calls, last, blocks, progress }: RunTools,
): Promise<{ readonly ending: Ending | undefined } | { readonly park: readonly CallProgress[] }> {
  const { limits, state, rec } = run;
  // Requested intentions count, even unknown or invalid ones (a resumed step counted them).
  if (progress === undefined) state.requestedToolCalls += calls.length;
  const before = state.requestedToolCalls - calls.length;
  const overBudgetFrom =
    limits.maxToolCalls === undefined
      ? Number.POSITIVE_INFINITY
      : Math.max(0, limits.maxToolCalls - before);
  const spent = progress === undefined && tokensSpent(limits, state.modelTokens);
  let results: ToolResultBlock[];
  if (last || spent) {
    const why = last
      ? "not run: a final answer was requested"
      : "not run: the turn's token budget is spent";
    results = await answerUnrun(run, calls, last ? "TOOL_NOT_RUN" : "TOOL_BUDGET_EXCEEDED", why);
  } else {
    const opts = {
      overBudgetFrom,
      depth: 0,
      grant: env.grant.byName,
      sensitivity: env.input.intent.sensitivity,
      signal: env.signal,
    };
    const done = await settledStep(run, calls, () => dispatchStep(run, calls, opts, progress));
    if (done.some((at) => at.state !== "done")) return { park: done };
    results = done.map((at) => (at as Extract<CallProgress, { state: "done" }>).result);
  }
  record(state, calls, results);
  state.log.append("user", results);
  await warn(rec, state, "maxToolCalls", state.requestedToolCalls, limits.maxToolCalls);
  return { ending: stepEnding(env, run, { calls, last, blocks }, spent, overBudgetFrom, results) };
}

/** What a step whose calls all have results makes of the turn: an ending, or nothing (go on). */
function stepEnding(
  env: TurnEnv,
  { limits }: ToolRun,
  { calls, last, blocks }: Pick<RunTools, "calls" | "last" | "blocks">,
  spent: boolean,
  overBudgetFrom: number,
  results: readonly ToolResultBlock[],
): Ending | undefined {
  if (last) return limitEnding(limits, last, false, "tool_use", []);
  if (spent) return budgetEnding("maxModelTokens", "tool_use");
  if (overBudgetFrom < calls.length) return budgetEnding("maxToolCalls", "tool_use");
  // A terminal tool ends the turn only when every call of the step succeeded.
  const terminal =
    results.every((r) => !r.isError) && calls.some((c) => env.engine.terminalTools.has(c.name));
  if (terminal)
    return {
      reply: replyBlocks(blocks).filter((b) => b.type === "text"),
      stopReason: "tool_use",
      terminalReason: "terminal_tool",
    };
  return undefined;
}

/** Runs the step's calls; an interrupted step still records what it has, then stops the turn. */
async function settledStep(
  run: ToolRun,
  calls: readonly StreamToolCall[],
  dispatch: () => Promise<readonly CallProgress[]>,
): Promise<readonly CallProgress[]> {
  try {
    return await dispatch();
  } catch (error) {
    if (!(error instanceof InterruptedDispatch)) throw error;
    record(run.state, calls, error.results);
    run.state.log.append("user", error.results);
    throw error.reason;
  }
}

/** Lists the step's calls on the result, by the result each got (the input as parsed, `{}` when it did not parse). */
function record(
  state: TurnState,
  calls: readonly StreamToolCall[],
  results: readonly ToolResultBlock[],
): void {
  const byId = new Map(results.map((r) => [r.callId, r]));
  for (const call of calls) {
    state.toolCalls.push({
      id: call.id,
      name: call.name,
      input: argumentsOf(call) ?? {},
      isError: byId.get(call.id)?.isError ?? true,
    });
  }
}

/** One durable warning per metric when the turn reaches half of it. */
async function warn(
  rec: Recorder,
  state: TurnState,
  metric: "maxModelTokens" | "maxToolCalls",
  used: number,
  limit: number | undefined,
): Promise<void> {
  if (limit === undefined || state.warned.has(metric) || used * 2 < limit) return;
  state.warned.add(metric);
  state.warnings.push(`${metric}:50%`);
  const detail = trailJoin(trailKind(metric), used, limit);
  await rec.record("lifecycle", { action: "budget.warning", detail });
  rec.emit({ type: "budget.warning", turnId: rec.turnId, metric, used, limit });
}

export const tokenWarning = (rec: Recorder, state: TurnState, limits: ResolvedLimits) =>
  warn(rec, state, "maxModelTokens", state.modelTokens, limits.maxModelTokens);
