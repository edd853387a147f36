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
import type { AskDecision } from "./asks.js";
import { admitAndRun } from "./execute.js";
import { InterruptedDispatch } from "./interrupted.js";
import type { Grant } from "./grant.js";
import type { CallProgress } from "./next.js";
import { errorResult } from "./output.js";
import type { Recorder } from "./recorder.js";
import type { DispatchOptions, ToolRun } from "./tool-run.js";
import { kindOrUnknown, UNREGISTERED_TOOL } from "./trail.js";

/**
 * Runs a delegate's tool calls (a handler's child): one result per call, in the model's order (see
 * `runCalls`). A delegate's call never parks: its ask waits for the resolver or is denied.
 */
export async function dispatchCalls(
  run: ToolRun,
  calls: readonly StreamToolCall[],
  opts: DispatchOptions,
): Promise<ToolResultBlock[]> {
  const slots = await runCalls(run, calls, opts, undefined);
  return slots.map((slot) => {
    if (slot?.state !== "done") throw new Error("a delegate's call parked: a broken invariant");
    return slot.result;
  });
}

/**
 * Runs a main step's calls, or what is left of them when a parked step resumes (`from`): each
 * call's progress, all `done`, or with the calls that parked on an ask `asked` and those after
 * them still `requested`.
 */
export function dispatchStep(
  run: ToolRun,
  calls: readonly StreamToolCall[],
  opts: DispatchOptions,
  from: readonly CallProgress[] | undefined,
): Promise<readonly CallProgress[]> {
  return runCalls(run, calls, opts, from).then((slots) =>
    // A call the step did not reach waits as it was: an ask (its decision given again on the
    // next resume), or not run yet.
    slots.map((slot, i): CallProgress => {
      if (slot !== undefined) return slot;
      const at = from?.[i];
      return at?.state === "decided" ? { state: "asked", ask: at.ask } : { state: "requested" };
    }),
  );
}

type Slot = CallProgress | undefined;

/**
 * Every call's intent is made durable first, in the model's order, before any call is admitted
 * (a resumed step recorded them when it first ran); then calls run in batches of
 * `maxParallelToolCalls`, a batch never passing a call that waits for a decision, and none
 * starting once one parked. When one call fails (a thrown handler, a failed record) its siblings
 * are aborted and awaited, and the dispatch throws `InterruptedDispatch` carrying the real results
 * and a synthesized one for every other call; on cancellation the synthesized text is "cancelled
 * before execution". Real results come first, then synthesized ones, each in model order.
 */
async function runCalls(
  run: ToolRun,
  calls: readonly StreamToolCall[],
  opts: DispatchOptions,
  from: readonly CallProgress[] | undefined,
): Promise<Slot[]> {
  const slots: Slot[] = calls.map((_, i) => {
    const at = from?.[i];
    return at?.state === "done" || at?.state === "asked" ? at : undefined;
  });
  // Siblings exist only with two or more calls: a lone call runs on the caller's signal, and its
  // failure, which has nothing left to stop, is only remembered.
  const link = calls.length > 1 ? linkedController(opts.signal) : undefined;
  const signal = link ? link.controller.signal : opts.signal;
  let failure: Error | undefined;
  try {
    if (from === undefined)
      for (const call of calls) {
        checkpoint(signal);
        await recordIntent(run, call);
      }
    for (let batch = nextBatch(run, slots, 0); batch.length > 0 && !signal.aborted; ) {
      const runs = batch.map((i) =>
        runOne(run, calls[i] as StreamToolCall, i, opts, signal, decisionOf(from?.[i])).then(
          (slot) => {
            slots[i] = slot;
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
      batch = nextBatch(run, slots, (batch.at(-1) as number) + 1);
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
      slots,
      abortReason(opts.signal),
      "TOOL_CANCELLED",
      CANCELLED_BEFORE_EXECUTION,
    );
  if (failure)
    throw interrupted(
      run.rec,
      calls,
      slots,
      failure,
      "TOOL_INTERRUPTED",
      "not completed: the turn stopped before this call finished",
    );
  return slots;
}

/**
 * The next calls to start from `start`, in the model's order, up to a batch: never a call after
 * one that waits for a decision (so a later call never runs ahead of an earlier ask), and none
 * once a call of the batch before parked.
 */
function nextBatch(run: ToolRun, slots: readonly Slot[], start: number): number[] {
  const batch: number[] = [];
  for (let i = 0; i < slots.length && batch.length < run.limits.maxParallelToolCalls; i++) {
    if (slots[i]?.state === "asked") break;
    if (i >= start && slots[i] === undefined) batch.push(i);
  }
  return batch;
}

function decisionOf(at: CallProgress | undefined): AskDecision | undefined {
  return at?.state === "decided" ? at.decision : undefined;
}

function interrupted(
  rec: Recorder,
  calls: readonly StreamToolCall[],
  slots: readonly Slot[],
  reason: Error,
  code: string,
  text: string,
): InterruptedDispatch {
  const real = slots.flatMap((slot) => (slot?.state === "done" ? [slot.result] : []));
  const synthesized = calls
    .filter((_, i) => slots[i]?.state !== "done")
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
  decision: AskDecision | undefined,
): Promise<CallProgress> {
  const block = await admitAndRun(run, call, index, opts, signal, decision);
  if (block.type === "asked") return { state: "asked", ask: block.ask };
  // A call that ran keeps its real result even when the turn was cancelled meanwhile.
  await recordResult(run, call, block);
  return { state: "done", result: block };
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
