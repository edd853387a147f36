import {
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  type RoutingIntent,
  trailJoin,
  trailKind,
} from "@alma-harness/core";
import { type CallOptions, type CallOutcome, UncertainCallError } from "@alma-harness/execution";
import { observeCache } from "./cache-observe.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import { answerBy, type ResolvedLimits } from "./limits.js";
import type { Recorder } from "./recorder.js";
import { CONTEXT_VERSION, type TurnState } from "./state.js";
import { applyStepPre } from "./step-pre.js";
import type { StepCall, StepDone, StepResult } from "./step-results.js";

/**
 * The turn's model calls, as the stages that make them see it: one governed round at a time on a
 * given signal (the turn's, or a child's narrower one), the policy for a child's or a retry's
 * route, and the limits and answer-by time every call keeps to. Built once per turn by the driver.
 */
export interface ModelCalls {
  readonly limits: ResolvedLimits;
  readonly rec: Recorder;
  /** The time every call of the turn ends by (the answer-by time, else the deadline). */
  readonly answerByAt: number | undefined;
  round(call: StepCall, signal: AbortSignal): Promise<StepResult>;
  /** The policy's route for a copied intent (a throw is the caller's to class). */
  resolve(intent: RoutingIntent): ModelChoice;
  hasClient(clientId: string): boolean;
}

export function modelCalls(env: TurnEnv, state: TurnState): ModelCalls {
  const { engine } = env;
  return {
    limits: env.limits,
    rec: env.rec,
    answerByAt: answerBy(env.input),
    round: (call, signal) => runModelStep(env, state, call, signal),
    resolve: (intent) => engine.policy.resolve(intent),
    hasClient: (clientId) => engine.clients.has(clientId),
  };
}

/**
 * One governed model round: `step:pre` at the hook boundary (main steps; narrow only), a call slot
 * reserved against `maxCalls`, then the one governed call of `execution` (`calls.run`: preflight,
 * claim and reservation, trails, dispatch, validated stream, settlement), then the search results
 * on the access trail. A refused call (unpriced, cap) comes back `refused` with nothing sent and
 * its slot given back, a settled pre-stream refusal `rejected`; everything uncertain throws
 * `UncertainTurnError` with its cause.
 */
async function runModelStep(
  env: TurnEnv,
  state: TurnState,
  call: StepCall,
  signal: AbortSignal,
): Promise<StepResult> {
  const { engine, input } = env;
  const client = engine.clients.get(call.choice.clientId);
  if (!client) throw new UncertainTurnError("loop", `no client "${call.choice.clientId}"`);
  const main = call.kind === "main";
  const request = main ? await applyStepPre(engine.hooks["step:pre"], env.rec, call) : call.request;
  // Reserved synchronously, so concurrent children can never overrun the root's call limit.
  if (state.callsUsed >= env.limits.maxCalls)
    throw new UncertainTurnError(`call:${call.kind}:call_limit`, "no call is left in this turn");
  state.callsUsed += 1;
  state.operations += 1;
  const operationId = `${input.turnId}:${call.kind}:${state.operations}`;
  let outcome: CallOutcome;
  try {
    outcome = await engine.calls.run(
      identityOf(env, call, operationId),
      client as ModelClient,
      call.choice,
      request,
      callOptions(env, state, call, request, signal),
    );
  } catch (error) {
    throw await failedCall(env, state, call.kind, operationId, error);
  }
  if (outcome.status === "refused") {
    state.callsUsed -= 1;
    return outcome.reason === "cap"
      ? { status: "refused", reason: "cap", cap: outcome.cap }
      : {
          status: "refused",
          reason: "unpriced",
          missing: outcome.missing,
          model: call.choice.model,
        };
  }
  state.addUsage(outcome.receipt.usage);
  env.rec.emit({ type: "cost.receipt", turnId: input.turnId, receipt: outcome.receipt });
  if (outcome.status === "rejected") {
    const { proof, error, receipt } = outcome;
    const rejection = { proof, callKind: call.kind, providerError: error, receipt, operationId };
    return { status: "rejected", rejection };
  }
  if (main)
    await observeCache(engine.cacheHygiene, env.rec, call.step, request, outcome.receipt.usage);
  for (const c of outcome.output.toolCalls) state.callIds.add(c.id);
  const done = { output: outcome.output, receipt: outcome.receipt, operationId };
  await recordSearches(env.rec, done);
  return { status: "settled", done };
}

/** Who the call is for: the root's identity, fenced by the turn's admission when it has one. */
function identityOf(env: TurnEnv, call: StepCall, operationId: string) {
  const { input } = env;
  return {
    scope: input.scope,
    sessionId: input.sessionId,
    trailSession: env.rec.trail.session,
    rootKey: input.rootKey,
    turnId: input.turnId,
    operationId,
    kind: call.kind,
    ...(input.admissionId !== undefined ? { admissionId: input.admissionId } : {}),
  };
}

/** The governed call's options: the turn's account, deadlines, route, and a main step's lifecycle. */
function callOptions(
  env: TurnEnv,
  state: TurnState,
  call: StepCall,
  request: ModelRequest,
  signal: AbortSignal,
): CallOptions {
  const { rec } = env;
  const answerByAt = answerBy(env.input);
  const parent = call.parentCallId ? { parentCallId: rec.trail.callId(call.parentCallId) } : {};
  const base = {
    account: state.account,
    signal,
    roundTimeoutMs: env.limits.roundTimeoutMs,
    ...(answerByAt !== undefined ? { answerByAt } : {}),
    route: { tier: call.tier, sensitivity: call.sensitivity, ...parent },
    seenCallIds: state.callIds,
  };
  if (call.kind !== "main") return base;
  const lifecycle = {
    step: call.step,
    contextVersion: CONTEXT_VERSION,
    messageRevision: state.log.revision,
  };
  return {
    ...base,
    lifecycle,
    onDispatch: () =>
      rec.emit({
        type: "model.request",
        turnId: rec.turnId,
        step: call.step,
        contextVersion: CONTEXT_VERSION,
        messageRevision: state.log.revision,
        model: request.model,
      }),
  };
}

/**
 * A call that threw, as the turn sees it. A store failure before the provider (`unsent`) may be
 * tried again only when the journal proves the call was never sent; anything else keeps what the
 * governed call said (spec: call-retry, undispatched-call-retry).
 */
async function failedCall(
  env: TurnEnv,
  state: TurnState,
  kind: StepCall["kind"],
  operationId: string,
  error: unknown,
): Promise<UncertainTurnError> {
  if (!(error instanceof UncertainCallError))
    return new UncertainTurnError(
      `call:${kind}:error`,
      (error as Error)?.message ?? "the call failed",
      error,
    );
  let attempt = error.attempt;
  if (attempt === "unsent" && env.limits.callAttempts !== undefined)
    attempt = (await env.engine.calls.provenUnsent(state.account, env.input.scope, operationId))
      ? "retry"
      : undefined;
  return new UncertainTurnError(error.uncertainCause, error.message, error.cause, attempt);
}

/** Each provider search result is one access event: the provider and the count, never the query. */
async function recordSearches(rec: Recorder, done: StepDone): Promise<void> {
  for (const block of done.output.blocks) {
    if (block.type !== "provider_tool_result") continue;
    await rec.record(
      "access",
      {
        tool: trailKind("web_search"),
        resource: trailJoin(
          trailKind("provider"),
          rec.trail.idOrHash(block.provider),
          trailKind("results"),
          block.resultCount,
        ),
        action: "read",
      },
      done.operationId,
    );
  }
}
