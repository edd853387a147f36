import type { Block, ModelChoice } from "@alma-harness/core";
import { checkpoint } from "./cancel.js";
import { type Driven, drive } from "./driver.js";
import type { TurnOutcome } from "./result.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import {
  finalizeCompleted,
  finalizeParked,
  finalizeUncertain,
  type TurnExit,
  toUncertain,
} from "./finalize.js";
import { CALL_MODEL, finish, type Next } from "./next.js";
import { mediaEgress, replayedHistory, resolveMedia, storedInput } from "./media.js";
import { extractMemory } from "./extraction.js";
import { recallFor } from "./recall.js";
import { rotationTurn } from "./model-stage.js";
import { coldRotation } from "./rotation.js";
import { type ModelCalls, modelCalls } from "./step.js";
import type { TurnState } from "./state.js";

/** Runs one turn to exactly one outcome. Every path leaves through the finalizer. */
export async function runTurnCore(
  env: TurnEnv,
  state: TurnState,
  choice: ModelChoice,
): Promise<TurnOutcome> {
  const calls = modelCalls(env, state);
  return await finishing(env, state, calls, async () => {
    await start(env, state, choice);
    // A cold start over the policy's size rotates before the first step (spec: long-context).
    const cold = await coldRotation(rotationTurn(env, calls), state);
    return await drive(env, state, calls, choice, cold ? finish(cold) : CALL_MODEL);
  });
}

/**
 * Goes on with a parked turn from its step (`first`, with each call's progress and the decisions
 * that came): no `turn:start`, no recall and no input again; the turn's media resolved again for
 * its requests. It ends like any turn, or parks again.
 */
export async function resumeTurnCore(
  env: TurnEnv,
  state: TurnState,
  choice: ModelChoice,
  first: Next,
): Promise<TurnOutcome> {
  const calls = modelCalls(env, state);
  return await finishing(env, state, calls, async () => {
    checkpoint(env.signal);
    const { engine, input } = env;
    await env.rec.record("lifecycle", { action: "turn.resumed" });
    env.rec.emit({ type: "turn.resumed", turnId: input.turnId, sessionId: input.sessionId });
    state.media = await resolveMedia(engine.media, env.rec, input, state.log.history);
    return await drive(env, state, calls, choice, first);
  });
}

/**
 * A run between its bookends (seed 004): `agent.started` first, `agent.stopped` with its outcome
 * last, after the finalizer's `turn.completed` or `turn.parked`.
 */
async function finishing(
  env: TurnEnv,
  state: TurnState,
  calls: ModelCalls,
  run: () => Promise<Driven>,
): Promise<TurnOutcome> {
  const { turnId, sessionId } = env.input;
  env.rec.emit({ type: "agent.started", turnId, sessionId });
  const outcome = await finishRun(env, state, calls, run);
  env.rec.emit({ type: "agent.stopped", turnId, status: outcome.status });
  return outcome;
}

/** The one way out of a run: the finalizer for its ending, the park, or the uncertain exit. */
async function finishRun(
  env: TurnEnv,
  state: TurnState,
  calls: ModelCalls,
  run: () => Promise<Driven>,
): Promise<TurnOutcome> {
  let driven: Driven;
  try {
    driven = await run();
    if (driven.kind === "parked")
      return await finalizeParked(exitOf(env), state, driven.continuation);
  } catch (error) {
    return await finalizeUncertain(exitOf(env), state, toUncertain(env.signal, error));
  }
  // The ending is decided: the extraction (when configured) never changes it, and never throws.
  const { engine, input } = env;
  await extractMemory(
    {
      calls,
      extraction: engine.extraction,
      scope: input.scope,
      sessionId: input.sessionId,
      history: input.history,
      sensitivity: input.intent.sensitivity,
      signal: env.signal,
    },
    state,
    driven.ending,
  );
  return await finalizeCompleted(exitOf(env), state, driven.ending);
}

function exitOf(env: TurnEnv): TurnExit {
  const turnEnd = env.engine.hooks["turn:end"];
  return { rec: env.rec, sessionId: env.input.sessionId, turnEnd, signal: env.signal };
}

/** Before the first step: the lifecycle record, `turn:start`, recall, the input with its recall block and volatile suffix, media egress. */
async function start(env: TurnEnv, state: TurnState, choice: ModelChoice): Promise<void> {
  const { engine, input } = env;
  checkpoint(env.signal);
  await env.rec.record("lifecycle", { action: "turn.started" });
  env.rec.emit({ type: "turn.started", turnId: input.turnId, sessionId: input.sessionId });
  const hook = engine.hooks["turn:start"];
  if (hook) {
    const frozen = Object.freeze({
      turnId: input.turnId,
      sessionId: input.sessionId,
      intent: input.intent,
      input: Object.freeze([Object.freeze({ role: "user" as const, blocks: input.input })]),
    });
    await env.rec.commit();
    try {
      await hook(frozen);
    } catch (error) {
      throw new UncertainTurnError("hook:turn:start", "the turn:start hook threw", error);
    }
  }
  // Recall (issue 18): after the cached prefix, before the volatile suffix, persisted with the input.
  const recalled = await recallFor(engine.recall, env.rec, {
    scope: input.scope,
    sessionId: input.sessionId,
    input: input.input,
    sensitivity: input.intent.sensitivity,
    clock: engine.clock,
    signal: env.signal,
  });
  // Media by bytes: resolved before anything is recorded or dispatched; the session keeps the ref.
  state.media = await resolveMedia(engine.media, env.rec, input, state.log.history);
  const blocks: Block[] = storedInput(input.input, state.media);
  if (recalled) blocks.push({ type: "text", text: recalled, origin: "harness" });
  const volatileText = await volatileSuffix(env);
  if (volatileText) blocks.push({ type: "text", text: volatileText, origin: "harness" });
  const provider = engine.clients.get(choice.clientId)?.provider ?? choice.clientId;
  await mediaEgress(
    env.rec,
    provider,
    [...input.input, ...replayedHistory(engine.media, state.log.history)],
    state.media,
  );
  state.log.append("user", blocks, input.inputMeta);
}

/** `volatile(ctx)` once per turn, joined with the static volatile blocks into one harness block. */
async function volatileSuffix(env: TurnEnv): Promise<string | undefined> {
  const { engine, input } = env;
  const parts = [...engine.volatileSystem];
  if (engine.volatile) {
    await env.rec.commit();
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
