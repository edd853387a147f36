import {
  deepFreeze,
  type ModelRequest,
  type Msg,
  type MsgMeta,
  type Sensitivity,
  stopTag,
  type UncertainCause,
} from "@alma-harness/core";
import { routeChild } from "./child.js";
import { UncertainTurnError } from "./errors.js";
import { budgetEnding, type Ending, type ResolvedLimits } from "./limits.js";
import {
  type CompiledLongContext,
  isCold,
  measureTokens,
  SUMMARY_INSTRUCTION,
  tailStart,
  transcriptOf,
} from "./long-context.js";
import { forgetViewScan } from "./search/loads.js";
import { engineMessage, type TurnState } from "./state.js";
import { attemptStep, unansweredError } from "./attempts.js";
import type { ModelCalls } from "./step.js";
import { refusedMetric, rejectionError, type StepDone, type StepRefused } from "./step-results.js";

/** What a rotation attempt did: rotated, could not (no policy, already rotated, no removable head), or was refused at zero cost. */
export type Rotation =
  | { readonly status: "rotated" }
  | { readonly status: "impossible" }
  | { readonly status: "refused"; readonly ending: Ending };

const IMPOSSIBLE: Rotation = Object.freeze({ status: "impossible" });
const ROTATED: Rotation = Object.freeze({ status: "rotated" });

/**
 * What a rotation reads of the turn: its model calls, the long-context policy, the view it started
 * from (and the stored messages that view was rendered from), its sensitivity and signal.
 */
export interface RotationTurn {
  readonly calls: ModelCalls;
  readonly policy: CompiledLongContext | undefined;
  readonly history: readonly Msg[];
  /** The stored view `history` was rendered from, message for message. */
  readonly log: readonly Msg[];
  readonly sensitivity: Sensitivity;
  readonly signal: AbortSignal;
}

export function callsLeft(limits: ResolvedLimits, state: TurnState): number {
  return limits.maxCalls - state.callsUsed;
}

/**
 * The summary call: its own route (the summary tier, the turn's sensitivity, task `summary`), one
 * tool-free step through the governed step runner under the root's caps and call limit, on the
 * routing and cost trails. Only a complete, non-empty answer is a summary; anything else is uncertain.
 */
async function summarize(
  turn: RotationTurn,
  state: TurnState,
  policy: CompiledLongContext,
  head: readonly Msg[],
  parentCallId: string | undefined,
): Promise<string | StepRefused> {
  const { sensitivity, calls } = turn;
  const choice = routeChild(calls, { tier: policy.summaryTier, sensitivity }, "summary");
  const transcript =
    transcriptOf(head, policy.speech) || "(The earlier conversation has no readable content.)";
  const request = deepFreeze<ModelRequest>({
    model: choice.model,
    system: [{ type: "text", text: SUMMARY_INSTRUCTION }],
    messages: [{ role: "user", blocks: [{ type: "text", text: transcript }] }],
    tools: [],
    maxOutputTokens: choice.maxOutputTokens,
    ...(choice.cache !== false
      ? {
          cache: {
            ttl: choice.cache.ttl,
            ...(choice.cache.tailTtl ? { tailTtl: choice.cache.tailTtl } : {}),
          },
        }
      : {}),
    ...(choice.reasoning ? { reasoning: choice.reasoning } : {}),
    ...(choice.serviceTier ? { serviceTier: choice.serviceTier } : {}),
  });
  const result = await attemptStep(
    calls,
    state,
    {
      kind: "summary",
      step: state.steps,
      choice,
      request,
      tier: policy.summaryTier,
      sensitivity,
      ...(parentCallId !== undefined ? { parentCallId } : {}),
    },
    turn.signal,
    { unusable: unusableSummary, task: "summary" },
  );
  // A summary out of attempts or rejected stays uncertain; a zero-cost refusal is a budget stop.
  if (result.status === "unanswered") throw unansweredError(result);
  if (result.status === "rejected") throw rejectionError(result.rejection);
  if (result.status === "refused") return result;
  return result.done.output.text.trim();
}

/** Only a complete, non-empty answer is a summary: anything else is its cause (tried again under `callAttempts`). */
function unusableSummary({ output }: StepDone): UncertainCause | undefined {
  if (
    output.toolCalls.length > 0 ||
    (output.stopReason !== "end_turn" && output.stopReason !== "stop_sequence")
  )
    return `call:summary:unavailable:${stopTag(output.stopReason)}`;
  return output.text.trim().length === 0 ? "call:summary:empty" : undefined;
}

/** A kept message re-recorded after the marker: verbatim, without its event id (unique in the log) or a marker of its own. */
function reRecorded(msg: Msg): Msg {
  const meta = msg.meta;
  if (meta?.event === undefined && meta?.rotation === undefined) return msg;
  const { event: _event, rotation: _rotation, ...rest } = meta;
  const kept: MsgMeta = rest;
  return engineMessage(
    Object.keys(kept).length > 0
      ? { role: msg.role, blocks: msg.blocks, meta: kept }
      : { role: msg.role, blocks: msg.blocks },
  );
}

/**
 * Rotates the turn's context once (spec: long-context): the older history is summarized, the last
 * `keepLastMessages` stay verbatim from a user message, and the turn continues from [summary, tail,
 * its own messages]. The batch gains the marker (`meta.rotation.replaces`: how many messages of the
 * view it stands for) and the tail re-recorded, so the stored view starts at the marker. Never
 * prunes mid-history; the log keeps everything.
 */
export async function rotate(
  turn: RotationTurn,
  state: TurnState,
  parentCallId?: string,
): Promise<Rotation> {
  const { policy, history, calls } = turn;
  if (!policy || state.log.rotated) return IMPOSSIBLE;
  const start = tailStart(history, policy.keepLastMessages);
  if (start === undefined) return IMPOSSIBLE;
  const summary = await summarize(turn, state, policy, history.slice(0, start), parentCallId);
  if (typeof summary !== "string")
    return { status: "refused", ending: budgetEnding(refusedMetric(summary), null) };
  const text = [policy.frame.before, summary, policy.frame.after]
    .filter((line) => line.length > 0)
    .join("\n\n");
  const marker = engineMessage({
    role: "user",
    blocks: [{ type: "text", text, origin: "harness" }],
    meta: { rotation: { replaces: start }, turn: calls.rec.turnId, at: calls.rec.now() },
  });
  const log = turn.log;
  state.log.rotate(
    [marker, ...history.slice(start)],
    [marker, ...log.slice(start).map(reRecorded)],
  );
  // Loads shown only by the summarized messages end with the rotation (spec: deferred-tools).
  forgetViewScan(state);
  return ROTATED;
}

/**
 * The cold-start rule: with a policy, at least two calls left (the summary and an answer), a cold
 * session whose history measures strictly over `rotateAtTokens` rotates before the first step.
 * Returns an ending only when the summary was refused at zero cost (a budget stop).
 */
export async function coldRotation(
  turn: RotationTurn,
  state: TurnState,
): Promise<Ending | undefined> {
  const { policy, history, calls } = turn;
  if (!policy || history.length === 0 || callsLeft(calls.limits, state) < 2) return undefined;
  if (!isCold(policy, history, calls.rec.now())) return undefined;
  let tokens: number;
  try {
    tokens = measureTokens(policy, history);
  } catch (error) {
    throw new UncertainTurnError("long_context", "the long-context estimate failed", error);
  }
  if (tokens <= policy.rotateAtTokens) return undefined;
  const rotation = await rotate(turn, state);
  return rotation.status === "refused" ? rotation.ending : undefined;
}
