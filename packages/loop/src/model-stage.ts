import { type ModelChoice, replyBlocks, type StreamToolCall } from "@alma-harness/core";
import { type AttemptResult, attemptStep } from "./attempts.js";
import { AbortedError, checkpoint } from "./cancel.js";
import { CALL_MODEL, finish, type Next } from "./next.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import {
  answerBy,
  budgetEnding,
  type Ending,
  type LastKind,
  lastKind,
  limitEnding,
  noticeFor,
  tokensSpent,
} from "./limits.js";
import { afterRejection, releasable } from "./rejection.js";
import type { RotationTurn } from "./rotation.js";
import {
  advertisedProviderTools,
  advertisedTools,
  buildRequest,
  type RequestParts,
} from "./request.js";
import type { TurnState } from "./state.js";
import type { ModelCalls } from "./step.js";
import { refusedMetric, type StepDone } from "./step-results.js";
import { tokenWarning } from "./tool-step.js";

/** What a rotation reads of the turn (a cold start's, or a context refusal's). */
export function rotationTurn(
  env: TurnEnv,
  calls: ModelCalls,
): RotationTurn & { readonly releasePreStreamRejections: boolean } {
  const { engine, input } = env;
  return {
    calls,
    policy: engine.longContext,
    history: input.history,
    log: input.log ?? input.history,
    sensitivity: input.intent.sensitivity,
    signal: env.signal,
    releasePreStreamRejections: engine.releasePreStreamRejections,
  };
}

function requestParts(env: TurnEnv): RequestParts {
  const { engine } = env;
  return {
    grant: env.grant,
    system: engine.system,
    providerTools: engine.providerTools,
    media: engine.media,
    sensitivity: env.input.intent.sensitivity,
  };
}

/** What the top of each step decides: go on (with or without a last-step notice), or end here. */
function beforeStep(
  env: TurnEnv,
  state: TurnState,
):
  | { readonly ending: Ending }
  | { readonly last: LastKind | undefined; readonly notice: string | undefined } {
  const { limits } = env;
  const { clock, providerTools } = env.engine;
  if (state.callsUsed >= limits.maxCalls)
    return { ending: limitEnding(limits, "call", false, "tool_use", []) };
  if (state.steps >= limits.maxSteps)
    return { ending: limitEnding(limits, "step", false, "tool_use", []) };
  if (tokensSpent(limits, state.modelTokens))
    return { ending: budgetEnding("maxModelTokens", "tool_use") };
  const last = lastKind(limits, state, clock.now(), answerBy(env.input));
  const sensitivity = env.input.intent.sensitivity;
  const advertises =
    advertisedTools(env.grant).length +
      advertisedProviderTools(providerTools, sensitivity, state.webSearches).length >
    0;
  return { last, notice: last && advertises ? noticeFor(limits, last) : undefined };
}

/**
 * One main step: the limits first (a deadline already passed ends the turn even when its timer
 * has not fired: no "one last step" after it), the frozen request, the governed call with its
 * attempts, then what its answer makes next: the step's tools, another step, or the ending.
 */
export async function modelStage(
  env: TurnEnv,
  state: TurnState,
  calls: ModelCalls,
  choice: ModelChoice,
): Promise<Next> {
  const { input } = env;
  checkpoint(env.signal);
  if (input.deadlineAt !== undefined && env.engine.clock.now() >= input.deadlineAt)
    throw new AbortedError("deadline");
  const top = beforeStep(env, state);
  if ("ending" in top) return finish(top.ending);
  const { last, notice } = top;
  const request = buildRequest(requestParts(env), state, choice, notice);
  state.steps += 1;
  const release = env.engine.releasePreStreamRejections;
  const result = await attemptStep(
    calls,
    state,
    {
      kind: "main",
      step: state.steps,
      choice,
      request,
      tier: input.intent.tier,
      sensitivity: input.intent.sensitivity,
    },
    env.signal,
    {
      keeps: (r) => r.proof === "context_window" || releasable(release, state, notice),
      ...(input.intent.task !== undefined ? { task: input.intent.task } : {}),
    },
  );
  if (result.status === "settled") return await answered(env, state, result.done, last, notice);
  return await unsettled(rotationTurn(env, calls), state, result, notice);
}

/** A main call that did not settle an answer: unanswered, refused at zero cost, or rejected. */
async function unsettled(
  turn: RotationTurn & { readonly releasePreStreamRejections: boolean },
  state: TurnState,
  result: Exclude<AttemptResult, { status: "settled" }>,
  notice: string | undefined,
): Promise<Next> {
  // Out of attempts: the turn completes unanswered, with an empty reply (spec: call-retry).
  if (result.status === "unanswered") {
    return finish({
      reply: [],
      stopReason: null,
      terminalReason: "unanswered",
      unanswered: { cause: result.cause },
    });
  }
  if (result.status === "refused") return finish(budgetEnding(refusedMetric(result), null));
  // The trusted settled rejection marker: nothing of the refused call was recorded or observed.
  const after = await afterRejection(turn, state, result.rejection, notice);
  if (after !== "retry") return finish(after);
  // The replacement call takes the refused step's place after the rotation.
  state.steps -= 1;
  return CALL_MODEL;
}

/** A settled main step: withheld (cut, refused), recorded, then its tools, another step or the ending. */
async function answered(
  env: TurnEnv,
  state: TurnState,
  done: StepDone,
  last: LastKind | undefined,
  notice: string | undefined,
): Promise<Next> {
  const { input } = env;
  const { output } = done;
  const step = state.steps;
  env.rec.emit({
    type: "model.response",
    turnId: input.turnId,
    step,
    stopReason: output.stopReason,
    usage: done.receipt.usage,
  });
  await tokenWarning(env.rec, state, env.limits);
  // max_tokens withholds the step's output: nothing of it is persisted or shown.
  if (output.stopReason === "max_tokens")
    return finish({ reply: [], stopReason: "max_tokens", terminalReason: "max_tokens" });
  // A refusal is not an answer: withheld like a cut step (kept, it would refuse every later call),
  // its closed category on the routing trail and in the result.
  if (output.stopReason === "refusal")
    return finish({
      reply: [],
      stopReason: "refusal",
      terminalReason: "refused",
      refusal: { category: output.refusal ?? "unspecified" },
    });
  // The stored message's blocks are a frozen, certified copy: the reply and the envelope reuse them.
  const { blocks } = state.log.append("assistant", output.blocks);
  state.webSearches += output.webSearches;
  await stepPost(env, step, output);
  if (output.text)
    env.rec.emit({ type: "step.text", turnId: input.turnId, step, text: output.text });
  if (output.stopReason === "context_window_exceeded")
    return finish({ reply: [], stopReason: output.stopReason, terminalReason: "completed" });
  if (output.toolCalls.length > 0)
    return { kind: "run_tools", step, calls: output.toolCalls, blocks, last };
  if (output.stopReason === "pause_turn")
    return last ? finish(limitEnding(env.limits, last, false, output.stopReason, [])) : CALL_MODEL;
  const reply = replyBlocks(blocks);
  // The limit names the ending only when the notice asked for this answer.
  return finish(
    last && notice
      ? limitEnding(env.limits, last, true, output.stopReason, reply)
      : { reply, stopReason: output.stopReason, terminalReason: "answered" },
  );
}

async function stepPost(
  env: TurnEnv,
  step: number,
  output: { stopReason: string; text: string; toolCalls: readonly StreamToolCall[] },
): Promise<void> {
  const hook = env.engine.hooks["step:post"];
  if (!hook) return;
  const frozen = Object.freeze({
    turnId: env.input.turnId,
    step,
    stopReason: output.stopReason,
    text: output.text,
    toolCalls: Object.freeze(
      output.toolCalls.map((c) => Object.freeze({ id: c.id, name: c.name })),
    ),
  });
  await env.rec.commit();
  try {
    await hook(frozen);
  } catch (error) {
    throw new UncertainTurnError("hook:step:post", "the step:post hook threw", error);
  }
}
