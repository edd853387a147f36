import { type Block, type ModelChoice, normalizeModelChoice, replyBlocks, type StreamToolCall, type ToolResultBlock } from "@alma-harness/core";
import { CallRefusedError } from "@alma-harness/execution";
import { durable } from "./audit.js";
import { AbortedError, abortReason } from "./cancel.js";
import { CancelledDispatch, dispatchCalls, errorResult } from "./dispatch.js";
import type { BudgetMetric, TurnOutcome, TurnResult } from "./engine.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import { finalizeCompleted, finalizeUncertain } from "./finalize.js";
import { DEFAULT_FINAL_ANSWER_NOTICE, DEFAULT_TIME_NOTICE } from "./limits.js";
import { advertisedProviderTools, advertisedTools, buildRequest } from "./request.js";
import type { TurnState } from "./state.js";
import { runModelStep } from "./step.js";

type Ending = Omit<TurnResult, "turnId" | "usage" | "costMicros" | "receipts" | "toolCalls" | "warnings">;
type LastKind = "call" | "step" | "time" | undefined;

/** Runs one turn to exactly one outcome. Every path leaves through the finalizer. */
export async function runTurnCore(env: TurnEnv, state: TurnState, choice: ModelChoice): Promise<TurnOutcome> {
  try {
    await start(env, state);
    const ending = await stepLoop(env, state, choice);
    return await finalizeCompleted(env, state, ending);
  } catch (error) {
    return await finalizeUncertain(env, state, toUncertain(env, error));
  }
}

function toUncertain(env: TurnEnv, error: unknown): UncertainTurnError {
  if (error instanceof UncertainTurnError) return error;
  if (env.signal.aborted || error instanceof AbortedError) {
    const reason = env.signal.aborted ? abortReason(env.signal) : (error as Error);
    const cause = reason instanceof AbortedError && reason.reason === "deadline" ? "deadline" : "cancelled";
    return new UncertainTurnError(cause, reason.message, reason);
  }
  return new UncertainTurnError("loop", (error as Error)?.message ?? String(error), error);
}

async function start(env: TurnEnv, state: TurnState): Promise<void> {
  const { engine, input } = env;
  if (env.signal.aborted) throw abortReason(env.signal);
  await durable(engine.audit, { trail: "lifecycle", action: "turn.started", scope: input.scope, sessionId: input.sessionId, turnId: input.turnId, at: engine.clock.now() });
  env.emit({ type: "turn.started", turnId: input.turnId, sessionId: input.sessionId });
  const hook = engine.hooks["turn:start"];
  if (hook) {
    try {
      await hook(Object.freeze({ turnId: input.turnId, sessionId: input.sessionId, intent: input.intent, input: Object.freeze([{ role: "user" as const, blocks: input.input }]) }));
    } catch (error) {
      throw new UncertainTurnError("hook:turn:start", "the turn:start hook threw", error);
    }
  }
  const blocks: Block[] = [...input.input];
  const volatileText = await volatileSuffix(env);
  if (volatileText) blocks.push({ type: "text", text: volatileText, origin: "harness" });
  state.append("user", blocks, input.inputMeta);
}

async function volatileSuffix(env: TurnEnv): Promise<string | undefined> {
  const { engine, input } = env;
  const parts = [...engine.volatileSystem];
  if (engine.volatile) {
    try {
      const text = await engine.volatile(
        Object.freeze({ scope: input.scope, sessionId: input.sessionId, intent: input.intent, now: engine.clock.now(), ...(input.trigger ? { trigger: input.trigger } : {}) }),
      );
      if (text !== undefined && typeof text !== "string") throw new TypeError("volatile must return a string or nothing");
      if (text) parts.push(text);
    } catch (error) {
      throw new UncertainTurnError("loop", "the volatile source failed", error);
    }
  }
  return parts.length > 0 ? parts.join("\n\n") : undefined;
}

function lastKind(env: TurnEnv, state: TurnState): LastKind {
  const { limits, clock } = env.engine;
  const callsLeft = limits.maxCalls - state.ledger.calls;
  const stepsLeft = limits.maxSteps - state.steps;
  if (callsLeft === 1) return "call";
  if (stepsLeft === 1) return "step";
  const deadline = env.input.deadlineAt;
  if (deadline !== undefined && state.steps > 0 && clock.now() + limits.stepReserveMs >= deadline) return "time";
  return undefined;
}

function limitEnding(env: TurnEnv, kind: Exclude<LastKind, undefined>, answered: boolean, stopReason: TurnResult["stopReason"], reply: readonly Block[]): Ending {
  const { limits } = env.engine;
  if (kind === "call") return { reply, stopReason, terminalReason: "call_limit", callLimit: { maxCalls: limits.maxCalls, answered } };
  if (kind === "step") return { reply, stopReason, terminalReason: "step_limit", stepLimit: { maxSteps: limits.maxSteps, answered } };
  return { reply, stopReason, terminalReason: "time_limit", timeLimit: { answered } };
}

function budgetEnding(metric: BudgetMetric, stopReason: TurnResult["stopReason"]): Ending {
  return { reply: [], stopReason, terminalReason: "budget", budget: { metric, answered: false } };
}

async function stepLoop(env: TurnEnv, state: TurnState, choice: ModelChoice): Promise<Ending> {
  const { engine } = env;
  let last: LastKind;
  for (;;) {
    if (env.signal.aborted) throw abortReason(env.signal);
    if (state.ledger.calls >= engine.limits.maxCalls) return limitEnding(env, "call", false, "tool_use", []);
    if (state.steps >= engine.limits.maxSteps) return limitEnding(env, "step", false, "tool_use", []);
    last = lastKind(env, state);
    const toolsAdvertised = advertisedTools(env).length + advertisedProviderTools(env, state).length > 0;
    const notice = last && toolsAdvertised ? (engine.limits.finalAnswerNotice ?? (last === "time" ? DEFAULT_TIME_NOTICE : DEFAULT_FINAL_ANSWER_NOTICE)) : undefined;
    const request = buildRequest(env, state, choice, notice);
    state.steps += 1;
    let done: Awaited<ReturnType<typeof runModelStep>>;
    try {
      done = await runModelStep(env, state, { kind: "main", step: state.steps, choice, request, tier: env.input.intent.tier, sensitivity: env.input.intent.sensitivity });
    } catch (error) {
      if (error instanceof CallRefusedError) return budgetEnding(error.reason === "cap" ? (error.cap ?? "perTurnUsd") : "unpriced", null);
      throw error;
    }
    const { output } = done;
    env.emit({ type: "model.response", turnId: env.input.turnId, step: state.steps, stopReason: output.stopReason, usage: done.receipt.usage });
    await tokenWarning(env, state);
    if (output.stopReason === "max_tokens") return { reply: [], stopReason: "max_tokens", terminalReason: "max_tokens" };
    state.append("assistant", output.blocks);
    await stepPost(env, state, output);
    if (output.text) env.emit({ type: "step.text", turnId: env.input.turnId, step: state.steps, text: output.text });
    if (output.stopReason === "context_window_exceeded") return { reply: [], stopReason: output.stopReason, terminalReason: "context_window" };
    state.webSearches += output.webSearches;
    if (output.toolCalls.length === 0) {
      if (output.stopReason === "pause_turn") continue;
      const reply = replyBlocks(output.blocks);
      return last ? limitEnding(env, last, true, output.stopReason, reply) : { reply, stopReason: output.stopReason, terminalReason: "answered" };
    }
    const ending = await toolStep(env, state, output.toolCalls, last, output.blocks);
    if (ending) return ending;
  }
}

async function stepPost(env: TurnEnv, state: TurnState, output: { stopReason: string; text: string; toolCalls: readonly StreamToolCall[] }): Promise<void> {
  const hook = env.engine.hooks["step:post"];
  if (!hook) return;
  try {
    await hook(Object.freeze({ turnId: env.input.turnId, step: state.steps, stopReason: output.stopReason, text: output.text, toolCalls: Object.freeze(output.toolCalls.map((c) => Object.freeze({ id: c.id, name: c.name }))) }));
  } catch (error) {
    throw new UncertainTurnError("hook:step:post", "the step:post hook threw", error);
  }
}

/** Runs a step's tool calls (or answers them as not run) and says whether the turn ends here. */
async function toolStep(env: TurnEnv, state: TurnState, calls: readonly StreamToolCall[], last: LastKind, blocks: readonly Block[]): Promise<Ending | undefined> {
  const { limits } = env.engine;
  const before = state.requestedToolCalls;
  state.requestedToolCalls += calls.length;
  const overBudgetFrom = limits.maxToolCalls === undefined ? Number.POSITIVE_INFINITY : Math.max(0, limits.maxToolCalls - before);
  const tokensSpent = limits.maxModelTokens !== undefined && state.modelTokens >= limits.maxModelTokens;
  let results: ToolResultBlock[];
  if (last || tokensSpent) {
    const why = last ? "not run: a final answer was requested" : "not run: the turn's token budget is spent";
    results = calls.map((c) => errorResult(c, last ? "TOOL_NOT_RUN" : "TOOL_BUDGET_EXCEEDED", why));
  } else {
    try {
      results = await dispatchCalls(env, state, calls, { overBudgetFrom, depth: 0, grant: env.engine.tools.size === env.grant.length ? env.engine.tools : new Map(env.grant.map((t) => [t.name, t])) });
    } catch (error) {
      if (error instanceof CancelledDispatch) {
        record(state, calls, error.results);
        state.append("user", error.results);
        throw error.reason;
      }
      throw error;
    }
  }
  record(state, calls, results);
  state.append("user", results);
  await toolWarning(env, state);
  if (last) return limitEnding(env, last, false, "tool_use", []);
  if (tokensSpent) return budgetEnding("maxModelTokens", "tool_use");
  if (overBudgetFrom < calls.length) return budgetEnding("maxToolCalls", "tool_use");
  const terminal = results.every((r) => !r.isError) && calls.some((c) => env.engine.terminalTools.has(c.name));
  if (terminal) return { reply: replyBlocks(blocks).filter((b) => b.type === "text"), stopReason: "tool_use", terminalReason: "terminal_tool" };
  return undefined;
}

function record(state: TurnState, calls: readonly StreamToolCall[], results: readonly ToolResultBlock[]): void {
  calls.forEach((call, i) => {
    let input = {};
    try {
      const parsed: unknown = JSON.parse(call.arguments || "{}");
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) input = parsed;
    } catch {
      // unparsable arguments are listed with an empty input
    }
    state.toolCalls.push({ id: call.id, name: call.name, input, isError: results[i]?.isError ?? true });
  });
}

async function warn(env: TurnEnv, state: TurnState, metric: string, used: number, limit: number | undefined): Promise<void> {
  if (limit === undefined || state.warned.has(metric) || used * 2 < limit) return;
  state.warned.add(metric);
  state.warnings.push(`${metric}:50%`);
  await durable(env.engine.audit, {
    trail: "lifecycle",
    action: "budget.warning",
    scope: env.input.scope,
    sessionId: env.input.sessionId,
    turnId: env.input.turnId,
    at: env.engine.clock.now(),
    detail: `${metric} ${used}/${limit}`,
  });
  env.emit({ type: "budget.warning", turnId: env.input.turnId, metric, used, limit });
}

const tokenWarning = (env: TurnEnv, state: TurnState) => warn(env, state, "maxModelTokens", state.modelTokens, env.engine.limits.maxModelTokens);
const toolWarning = (env: TurnEnv, state: TurnState) => warn(env, state, "maxToolCalls", state.requestedToolCalls, env.engine.limits.maxToolCalls);

/** Resolves the main route once per turn; a throw or a malformed choice is a refusal. */
export function resolveMainChoice(env: Pick<TurnEnv, "engine">, intent: TurnEnv["input"]["intent"]): ModelChoice {
  const choice = normalizeModelChoice(env.engine.policy.resolve({ ...intent }));
  if (!env.engine.clients.has(choice.clientId)) throw new Error(`the policy chose an absent client "${choice.clientId}"`);
  return choice;
}
