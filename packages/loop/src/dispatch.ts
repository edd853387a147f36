import {
  SEARCH_TOOLS_NAME,
  type StreamToolCall,
  type ToolResultBlock,
  type TrailValue,
  trailId,
} from "@alma-harness/core";
import {
  abortReason,
  CANCELLED_BEFORE_EXECUTION,
  CLEANUP_GRACE_MS,
  checkpoint,
  linkedController,
  raceOwned,
  settleWithin,
} from "./cancel.js";
import { admitAndRun } from "./execute.js";
import { InterruptedDispatch } from "./interrupted.js";
import type { Grant } from "./grant.js";
import { errorResult } from "./output.js";
import type { Recorder } from "./recorder.js";
import type { DispatchOptions, ToolRun } from "./tool-run.js";
import { kindOrUnknown, UNREGISTERED_TOOL } from "./trail.js";

/**
 * Runs a step's tool calls and returns one result per call, in the model's order. Every call's
 * intent is made durable first, in the model's order, before any call is admitted; then calls run
 * in batches of `maxParallelToolCalls`. When one call fails (a thrown handler, a failed record) its
 * siblings are aborted and awaited, and the dispatch throws `InterruptedDispatch` carrying the
 * real results and a synthesized one for every other call; on cancellation the synthesized text
 * is "cancelled before execution". Real results come first, then synthesized ones, each in model order.
 */
export async function dispatchCalls(
  run: ToolRun,
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
      await recordIntent(run, call);
    }
    const size = run.limits.maxParallelToolCalls;
    for (let start = 0; start < calls.length && !signal.aborted; start += size) {
      const runs = calls.slice(start, start + size).map((call, i) =>
        runOne(run, call, start + i, opts, signal).then(
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
      await raceOwned(all, signal).catch(() => settleWithin(all, CLEANUP_GRACE_MS, run.clock));
    }
  } catch (error) {
    failure ??= error instanceof Error ? error : new Error(String(error));
  } finally {
    link?.dispose();
  }
  if (opts.signal.aborted)
    throw interrupted(
      run.rec,
      calls,
      results,
      abortReason(opts.signal),
      "TOOL_CANCELLED",
      CANCELLED_BEFORE_EXECUTION,
    );
  if (failure)
    throw interrupted(
      run.rec,
      calls,
      results,
      failure,
      "TOOL_INTERRUPTED",
      "not completed: the turn stopped before this call finished",
    );
  return results as ToolResultBlock[];
}

function interrupted(
  rec: Recorder,
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
    rec.emit({
      type: "tool.result",
      turnId: rec.turnId,
      callId: block.callId,
      name: block.name,
      isError: true,
      code,
    });
  }
  return new InterruptedDispatch(reason, [...real, ...synthesized]);
}

/** A tool name as the trail records it: a registered name (or the engine's own search), else `unregistered`, never what the model wrote. */
export function trailToolName(grant: Grant, name: string): TrailValue {
  return grant.registered.has(name) || name === SEARCH_TOOLS_NAME
    ? trailId(name)
    : UNREGISTERED_TOOL;
}

/** Where a call's intent and result are recorded: the turn's recorder, its registered names. */
type Records = Pick<ToolRun, "rec" | "grant">;

async function recordIntent({ rec, grant }: Records, call: StreamToolCall): Promise<void> {
  const detail = trailToolName(grant, call.name);
  await rec.record("lifecycle", { action: "tool.call", detail }, call.id);
  rec.emit({ type: "tool.call", turnId: rec.turnId, callId: call.id, name: call.name });
}

async function recordResult(
  { rec }: Records,
  call: StreamToolCall,
  block: ToolResultBlock,
): Promise<void> {
  const detail = kindOrUnknown(block.code ?? (block.isError ? "error" : "ok"));
  await rec.record("lifecycle", { action: "tool.result", detail }, call.id);
  rec.emit({
    type: "tool.result",
    turnId: rec.turnId,
    callId: call.id,
    name: call.name,
    isError: block.isError,
    ...(block.code ? { code: block.code } : {}),
  });
}

async function runOne(
  run: ToolRun,
  call: StreamToolCall,
  index: number,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  const block = await admitAndRun(run, call, index, opts, signal);
  // A call that ran keeps its real result even when the turn was cancelled meanwhile.
  await recordResult(run, call, block);
  return block;
}

/** Answers calls that may not run (a last step, a spent budget): intent and result recorded, nothing else. */
export async function answerUnrun(
  run: Records,
  calls: readonly StreamToolCall[],
  code: string,
  text: string,
): Promise<ToolResultBlock[]> {
  const out: ToolResultBlock[] = [];
  for (const call of calls) await recordIntent(run, call);
  for (const call of calls) {
    const block = errorResult(call, code, text);
    await recordResult(run, call, block);
    out.push(block);
  }
  return out;
}
