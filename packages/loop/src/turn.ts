import { type Block, type ModelChoice, replyBlocks, type StreamToolCall } from "@alma-harness/core";
import { CallRefusedError } from "@alma-harness/execution";
import { commitBefore, durable } from "./audit.js";
import { AbortedError, checkpoint } from "./cancel.js";
import type { TurnOutcome } from "./engine.js";
import type { TurnEnv } from "./env.js";
import { CallRejectedError, CallUnansweredError, UncertainTurnError } from "./errors.js";
import { finalizeCompleted, finalizeUncertain, toUncertain } from "./finalize.js";
import {
  budgetEnding,
  type Ending,
  lastKind,
  limitEnding,
  noticeFor,
  tokensSpent,
} from "./limits.js";
import { trailBase } from "./trail.js";
import { mediaEgress, replayedHistory, resolveMedia, storedInput } from "./media.js";
import { afterRejection, releasable } from "./rejection.js";
import { advertisedProviderTools, advertisedTools, buildRequest } from "./request.js";
import { extractMemory } from "./extraction.js";
import { recallFor } from "./recall.js";
import { coldRotation } from "./rotation.js";
import type { TurnState } from "./state.js";
import { attemptStep } from "./attempts.js";
import { tokenWarning, toolStep } from "./tool-step.js";

/** Runs one turn to exactly one outcome. Every path leaves through the finalizer. */
export async function runTurnCore(
  env: TurnEnv,
  state: TurnState,
  choice: ModelChoice,
): Promise<TurnOutcome> {
  let ending: Ending;
  try {
    await start(env, state, choice);
    // A cold start over the policy's size rotates before the first step (spec: long-context).
    ending = (await coldRotation(env, state)) ?? (await stepLoop(env, state, choice));
  } catch (error) {
    return await finalizeUncertain(env, state, toUncertain(env.signal, error));
  }
  // The ending is decided: the extraction (when configured) never changes it, and never throws.
  await extractMemory(env, state, ending);
  return await finalizeCompleted(env, state, ending);
}

/** Before the first step: the lifecycle record, `turn:start`, recall, the input with its recall block and volatile suffix, media egress. */
async function start(env: TurnEnv, state: TurnState, choice: ModelChoice): Promise<void> {
  const { engine, input } = env;
  checkpoint(env.signal);
  await durable(engine.audit, {
    trail: "lifecycle",
    action: "turn.started",
    ...trailBase(env.trail, engine.clock.now()),
  });
  env.emit({ type: "turn.started", turnId: input.turnId, sessionId: input.sessionId });
  const hook = engine.hooks["turn:start"];
  if (hook) {
    const frozen = Object.freeze({
      turnId: input.turnId,
      sessionId: input.sessionId,
      intent: input.intent,
      input: Object.freeze([Object.freeze({ role: "user" as const, blocks: input.input })]),
    });
    await commitBefore(engine);
    try {
      await hook(frozen);
    } catch (error) {
      throw new UncertainTurnError("hook:turn:start", "the turn:start hook threw", error);
    }
  }
  // Recall (issue 18): after the cached prefix, before the volatile suffix, persisted with the input.
  const recalled = await recallFor(env);
  // Media by bytes: resolved before anything is recorded or dispatched; the session keeps the ref.
  state.media = await resolveMedia(env, state.log.history);
  const blocks: Block[] = storedInput(input.input, state.media);
  if (recalled) blocks.push({ type: "text", text: recalled, origin: "harness" });
  const volatileText = await volatileSuffix(env);
  if (volatileText) blocks.push({ type: "text", text: volatileText, origin: "harness" });
  await mediaEgress(
    env,
    choice,
    [...input.input, ...replayedHistory(env, state.log.history)],
    state.media,
  );
  state.log.append("user", blocks, input.inputMeta);
}

/** `volatile(ctx)` once per turn, joined with the static volatile blocks into one harness block. */
async function volatileSuffix(env: TurnEnv): Promise<string | undefined> {
  const { engine, input } = env;
  const parts = [...engine.volatileSystem];
  if (engine.volatile) {
    await commitBefore(engine);
    try {
      const text = await engine.volatile(
        Object.freeze({
          scope: input.scope,
          sessionId: input.sessionId,
          intent: input.intent,
          now: engine.clock.now(),
          ...(input.trigger !== undefined ? { trigger: input.trigger } : {}),
        }),
      );
      if (text !== undefined && typeof text !== "string")
        throw new TypeError("volatile must return a string or nothing");
      if (text) parts.push(text);
    } catch (error) {
      throw new UncertainTurnError("volatile", "the volatile source failed", error);
    }
  }
  return parts.length > 0 ? parts.join("\n\n") : undefined;
}

/** What the top of each step decides: go on (with or without a last-step notice), or end here. */
function beforeStep(
  env: TurnEnv,
  state: TurnState,
):
  | { readonly ending: Ending }
  | { readonly last: ReturnType<typeof lastKind>; readonly notice: string | undefined } {
  const { limits } = env.engine;
  if (state.callsUsed >= limits.maxCalls)
    return { ending: limitEnding(env, "call", false, "tool_use", []) };
  if (state.steps >= limits.maxSteps)
    return { ending: limitEnding(env, "step", false, "tool_use", []) };
  if (tokensSpent(env, state)) return { ending: budgetEnding("maxModelTokens", "tool_use") };
  const last = lastKind(env, state);
  const advertises = advertisedTools(env).length + advertisedProviderTools(env, state).length > 0;
  return { last, notice: last && advertises ? noticeFor(env, last) : undefined };
}

async function stepLoop(env: TurnEnv, state: TurnState, choice: ModelChoice): Promise<Ending> {
  const { input } = env;
  for (;;) {
    checkpoint(env.signal);
    // A deadline already passed ends the turn before the next step, even when its timer has not
    // fired (a process paused past it): no "one last step" after the deadline.
    if (input.deadlineAt !== undefined && env.engine.clock.now() >= input.deadlineAt)
      throw new AbortedError("deadline");
    const next = beforeStep(env, state);
    if ("ending" in next) return next.ending;
    const { last, notice } = next;
    const request = buildRequest(env, state, choice, notice);
    state.steps += 1;
    let done: Awaited<ReturnType<typeof attemptStep>>;
    try {
      done = await attemptStep(
        env,
        state,
        {
          kind: "main",
          step: state.steps,
          choice,
          request,
          tier: input.intent.tier,
          sensitivity: input.intent.sensitivity,
        },
        {
          keeps: (e) => e.proof === "context_window" || releasable(env, state, notice),
          ...(input.intent.task !== undefined ? { task: input.intent.task } : {}),
        },
      );
    } catch (error) {
      // Out of attempts: the turn completes unanswered, with an empty reply (spec: call-retry).
      if (error instanceof CallUnansweredError)
        return {
          reply: [],
          stopReason: null,
          terminalReason: "unanswered",
          unanswered: { cause: error.cause_ },
        };
      if (error instanceof CallRefusedError)
        return budgetEnding(
          error.reason === "cap" ? (error.cap ?? "perTurnUsd") : "unpriced",
          null,
        );
      if (!(error instanceof CallRejectedError)) throw error;
      // The trusted settled rejection marker: nothing of the refused call was recorded or observed.
      const after = await afterRejection(env, state, error, notice);
      if (after !== "retry") return after;
      // The replacement call takes the refused step's place after the rotation.
      state.steps -= 1;
      continue;
    }
    const { output } = done;
    env.emit({
      type: "model.response",
      turnId: input.turnId,
      step: state.steps,
      stopReason: output.stopReason,
      usage: done.receipt.usage,
    });
    await tokenWarning(env, state);
    // max_tokens withholds the step's output: nothing of it is persisted or shown.
    if (output.stopReason === "max_tokens")
      return { reply: [], stopReason: "max_tokens", terminalReason: "max_tokens" };
    // A refusal is not an answer: withheld like a cut step (kept, it would refuse every later call),
    // its closed category on the routing trail and in the result.
    if (output.stopReason === "refusal")
      return {
        reply: [],
        stopReason: "refusal",
        terminalReason: "refused",
        refusal: { category: output.refusal ?? "unspecified" },
      };
    // The stored message's blocks are a frozen, certified copy: the reply and the envelope reuse them.
    const { blocks } = state.log.append("assistant", output.blocks);
    state.webSearches += output.webSearches;
    await stepPost(env, state, output);
    if (output.text)
      env.emit({ type: "step.text", turnId: input.turnId, step: state.steps, text: output.text });
    if (output.stopReason === "context_window_exceeded")
      return { reply: [], stopReason: output.stopReason, terminalReason: "context_window" };
    if (output.toolCalls.length === 0) {
      if (output.stopReason === "pause_turn") {
        if (last) return limitEnding(env, last, false, output.stopReason, []);
        continue;
      }
      const reply = replyBlocks(blocks);
      // The limit names the ending only when the notice asked for this answer.
      return last && notice
        ? limitEnding(env, last, true, output.stopReason, reply)
        : { reply, stopReason: output.stopReason, terminalReason: "answered" };
    }
    const ending = await toolStep(env, state, output.toolCalls, last, blocks);
    if (ending) return ending;
  }
}

async function stepPost(
  env: TurnEnv,
  state: TurnState,
  output: { stopReason: string; text: string; toolCalls: readonly StreamToolCall[] },
): Promise<void> {
  const hook = env.engine.hooks["step:post"];
  if (!hook) return;
  const frozen = Object.freeze({
    turnId: env.input.turnId,
    step: state.steps,
    stopReason: output.stopReason,
    text: output.text,
    toolCalls: Object.freeze(
      output.toolCalls.map((c) => Object.freeze({ id: c.id, name: c.name })),
    ),
  });
  await commitBefore(env.engine);
  try {
    await hook(frozen);
  } catch (error) {
    throw new UncertainTurnError("hook:step:post", "the step:post hook threw", error);
  }
}
