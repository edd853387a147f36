import {
  SEARCH_TOOLS_NAME,
  type Sensitivity,
  type StreamToolCall,
  type ToolDefinition,
  type ToolResultBlock,
  type TrailValue,
  trailId,
} from "@alma-harness/core";
import { durable } from "./audit.js";
import {
  abortReason,
  CANCELLED_BEFORE_EXECUTION,
  CLEANUP_GRACE_MS,
  checkpoint,
  linkedController,
  raceOwned,
  settleWithin,
} from "./cancel.js";
import type { TurnEnv } from "./env.js";
import { admitAndRun } from "./execute.js";
import type { TurnState } from "./state.js";
import { kindOrUnknown, trailBase, UNREGISTERED_TOOL } from "./trail.js";

export interface DispatchOptions {
  /** Calls at this index or later exceed `maxToolCalls`: their intent is recorded, nothing else. */
  readonly overBudgetFrom: number;
  readonly depth: number;
  /** The tools this caller may run (the turn's grant, or a delegate's narrowed one). */
  readonly grant: ReadonlyMap<string, ToolDefinition>;
  /** The caller's sensitivity: what its handlers' children may not exceed. */
  readonly sensitivity: Sensitivity;
  /** The caller's signal (the turn's, or a child's). */
  readonly signal: AbortSignal;
}

/** Carries the step's results (real ones, then synthesized ones) out of a dispatch that stopped. */
export class InterruptedDispatch extends Error {
  constructor(
    readonly reason: Error,
    readonly results: ToolResultBlock[],
  ) {
    super(reason.message);
  }
}

export function errorResult(
  call: { id: string; name: string },
  code: string,
  message: string,
): ToolResultBlock {
  return {
    type: "tool_result",
    callId: call.id,
    name: call.name,
    output: message,
    isError: true,
    code,
  };
}

/**
 * Runs a step's tool calls and returns one result per call, in the model's order. Every call's
 * intent is made durable first, in the model's order, before any call is admitted; then calls run
 * in batches of `maxParallelToolCalls`. When one call fails (a thrown handler, a failed record) its
 * siblings are aborted and awaited, and the dispatch throws `InterruptedDispatch` carrying the
 * real results and a synthesized one for every other call; on cancellation the synthesized text
 * is "cancelled before execution". Real results come first, then synthesized ones, each in model order.
 */
export async function dispatchCalls(
  env: TurnEnv,
  state: TurnState,
  calls: readonly StreamToolCall[],
  opts: DispatchOptions,
): Promise<ToolResultBlock[]> {
  const results: (ToolResultBlock | undefined)[] = new Array(calls.length).fill(undefined);
  // Siblings exist only with two or more calls: a lone call runs on the caller's signal, and its
  // failure, which has nothing left to stop, is only remembered.
  const link = calls.length > 1 ? linkedController(opts.signal) : undefined;
  const signal = link ? link.controller.signal : opts.signal;
  let failure: Error | undefined;
  try {
    for (const call of calls) {
      checkpoint(signal);
      await recordIntent(env, call);
    }
    const size = env.engine.limits.maxParallelToolCalls;
    for (let start = 0; start < calls.length && !signal.aborted; start += size) {
      const runs = calls.slice(start, start + size).map((call, i) =>
        runOne(env, state, call, start + i, opts, signal).then(
          (block) => {
            results[start + i] = block;
          },
          (error: unknown) => {
            failure ??= error instanceof Error ? error : new Error(String(error));
            link?.controller.abort(failure);
          },
        ),
      );
      // Runs never reject; a cancelled batch is given the grace period to settle, never more.
      const all = Promise.all(runs);
      await raceOwned(all, signal).catch(() =>
        settleWithin(all, CLEANUP_GRACE_MS, env.engine.clock),
      );
    }
  } catch (error) {
    failure ??= error instanceof Error ? error : new Error(String(error));
  } finally {
    link?.dispose();
  }
  if (opts.signal.aborted)
    throw interrupted(
      env,
      calls,
      results,
      abortReason(opts.signal),
      "TOOL_CANCELLED",
      CANCELLED_BEFORE_EXECUTION,
    );
  if (failure)
    throw interrupted(
      env,
      calls,
      results,
      failure,
      "TOOL_INTERRUPTED",
      "not completed: the turn stopped before this call finished",
    );
  return results as ToolResultBlock[];
}

function interrupted(
  env: TurnEnv,
  calls: readonly StreamToolCall[],
  results: readonly (ToolResultBlock | undefined)[],
  reason: Error,
  code: string,
  text: string,
): InterruptedDispatch {
  const real = results.filter((r): r is ToolResultBlock => r !== undefined);
  const synthesized = calls
    .filter((_, i) => results[i] === undefined)
    .map((call) => errorResult(call, code, text));
  for (const block of synthesized) {
    env.rec.emit({
      type: "tool.result",
      turnId: env.input.turnId,
      callId: block.callId,
      name: block.name,
      isError: true,
      code,
    });
  }
  return new InterruptedDispatch(reason, [...real, ...synthesized]);
}

/** A tool name as the trail records it: a registered name (or the engine's own search), else `unregistered`, never what the model wrote. */
export function trailToolName(env: TurnEnv, name: string): TrailValue {
  return env.engine.tools.has(name) || name === SEARCH_TOOLS_NAME
    ? trailId(name)
    : UNREGISTERED_TOOL;
}

async function recordIntent(env: TurnEnv, call: StreamToolCall): Promise<void> {
  const { engine, input } = env;
  await durable(engine.audit, {
    trail: "lifecycle",
    action: "tool.call",
    ...trailBase(env.rec.trail, engine.clock.now(), call.id),
    detail: trailToolName(env, call.name),
  });
  env.rec.emit({ type: "tool.call", turnId: input.turnId, callId: call.id, name: call.name });
}

async function recordResult(
  env: TurnEnv,
  call: StreamToolCall,
  block: ToolResultBlock,
): Promise<void> {
  const { engine, input } = env;
  const detail = kindOrUnknown(block.code ?? (block.isError ? "error" : "ok"));
  await durable(engine.audit, {
    trail: "lifecycle",
    action: "tool.result",
    ...trailBase(env.rec.trail, engine.clock.now(), call.id),
    detail,
  });
  env.rec.emit({
    type: "tool.result",
    turnId: input.turnId,
    callId: call.id,
    name: call.name,
    isError: block.isError,
    ...(block.code ? { code: block.code } : {}),
  });
}

async function runOne(
  env: TurnEnv,
  state: TurnState,
  call: StreamToolCall,
  index: number,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  const block = await admitAndRun(env, state, call, index, opts, signal);
  // A call that ran keeps its real result even when the turn was cancelled meanwhile.
  await recordResult(env, call, block);
  return block;
}

/** Answers calls that may not run (a last step, a spent budget): intent and result recorded, nothing else. */
export async function answerUnrun(
  env: TurnEnv,
  calls: readonly StreamToolCall[],
  code: string,
  text: string,
): Promise<ToolResultBlock[]> {
  const out: ToolResultBlock[] = [];
  for (const call of calls) await recordIntent(env, call);
  for (const call of calls) {
    const block = errorResult(call, code, text);
    await recordResult(env, call, block);
    out.push(block);
  }
  return out;
}
