import {
  type CallKind,
  type CostReceipt,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  ProviderError,
  type Sensitivity,
  SettlementConflictError,
  type Tier,
  type UsageEvidence,
  ZERO_USAGE,
} from "@alma-harness/core";
import { AuditFailedError, CallRefusedError, type PreparedCall, UnsettledCallError } from "@alma-harness/execution";
import { attestedRejection } from "./attest.js";
import { durable } from "./audit.js";
import { AbortedError, abortRacer, abortReason, RELEASED, startTimer } from "./cancel.js";
import type { TurnEnv } from "./env.js";
import { CallRejectedError, StreamInvalidError, StreamTornError, UncertainTurnError } from "./errors.js";
import { CONTEXT_VERSION, type TurnState } from "./state.js";
import { applyStepPre } from "./step-pre.js";
import { collectStep, type StepOutput, type StreamSeen } from "./stream-validate.js";

export interface StepCall {
  readonly kind: CallKind;
  readonly step: number;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
  readonly parentCallId?: string;
  readonly sensitivity: Sensitivity;
  readonly tier: Tier;
}

export interface StepDone {
  readonly output: StepOutput;
  readonly receipt: CostReceipt;
  readonly operationId: string;
}

/**
 * One governed model round: `step:pre` at the hook boundary (main steps; narrow only), a call slot
 * reserved against `maxCalls`, the governed runner's preflight and durable claim, the routing
 * trail, the validated stream, the settled receipt, then the search results on the access trail.
 * A refused call (unpriced, cap) throws `CallRefusedError` with nothing sent and its slot given
 * back; everything uncertain throws `UncertainTurnError` with its cause.
 */
export async function runModelStep(env: TurnEnv, state: TurnState, call: StepCall): Promise<StepDone> {
  const { engine, input } = env;
  const client = engine.clients.get(call.choice.clientId);
  if (!client) throw new UncertainTurnError("loop", `no client "${call.choice.clientId}"`);
  const request = call.kind === "main" ? await applyStepPre(env, call) : call.request;
  // Reserved synchronously, so concurrent children can never overrun the root's call limit.
  if (state.callsUsed >= engine.limits.maxCalls) throw new UncertainTurnError(`call:${call.kind}:call_limit`, "no call is left in this turn");
  state.callsUsed += 1;
  state.operations += 1;
  const operationId = `${input.turnId}:${call.kind}:${state.operations}`;
  const identity = { scope: input.scope, sessionId: input.sessionId, rootKey: input.rootKey, turnId: input.turnId, operationId, kind: call.kind };
  let prepared: PreparedCall;
  try {
    prepared = await engine.calls.prepare(identity, client, call.choice, request, state.ledger, engine.clock.now());
  } catch (error) {
    state.callsUsed -= 1;
    if (error instanceof CallRefusedError) throw error;
    if (error instanceof AuditFailedError) throw new UncertainTurnError("audit", error.message, error);
    if (error instanceof ProviderError) throw new UncertainTurnError(`call:${call.kind}:request_invalid`, error.message, error);
    throw new UncertainTurnError(`call:${call.kind}:error`, "the call could not be claimed", error);
  }
  await recordRequest(env, state, call, operationId, request, prepared);
  const done = await streamAndSettle(env, state, call, client, prepared, operationId);
  await recordServed(env, call, operationId, done.receipt);
  await recordSearches(env, done);
  return done;
}

function routingBase(env: TurnEnv, call: StepCall, operationId: string) {
  const { engine, input } = env;
  return {
    scope: input.scope,
    sessionId: input.sessionId,
    turnId: input.turnId,
    callId: operationId,
    at: engine.clock.now(),
    trail: "routing" as const,
    kind: call.kind,
    tier: call.tier,
    sensitivity: call.sensitivity,
    clientId: call.choice.clientId,
    model: call.choice.model,
    cacheTtl: call.choice.cache === false ? ("off" as const) : call.choice.cache.ttl,
    ...(call.choice.reasoning ? { reasoning: call.choice.reasoning } : {}),
    ...(call.choice.serviceTier ? { requestedTier: call.choice.serviceTier } : {}),
    ...(call.parentCallId ? { parentCallId: call.parentCallId } : {}),
  };
}

/** The routing trail's second record of a call: the tier the wire says served it (pricing followed it). */
async function recordServed(env: TurnEnv, call: StepCall, operationId: string, receipt: CostReceipt): Promise<void> {
  await durable(env.engine.audit, { ...routingBase(env, call, operationId), servedTier: receipt.serviceTier });
}

/** The routing trail (every call) and the lifecycle request record (main steps), before egress. */
async function recordRequest(env: TurnEnv, state: TurnState, call: StepCall, operationId: string, request: ModelRequest, prepared: PreparedCall): Promise<void> {
  const { engine, input } = env;
  const base = { scope: input.scope, sessionId: input.sessionId, turnId: input.turnId, callId: operationId, at: engine.clock.now() };
  try {
    await durable(engine.audit, routingBase(env, call, operationId));
    if (call.kind === "main") {
      await durable(engine.audit, { ...base, trail: "lifecycle", action: "model.request", step: call.step, contextVersion: CONTEXT_VERSION, messageRevision: state.revision });
    }
  } catch (error) {
    // Nothing was sent: the claim ends as not dispatched.
    await prepared.cancel("audit").catch(() => undefined);
    throw error;
  }
  if (call.kind === "main") {
    env.emit({ type: "model.request", turnId: input.turnId, step: call.step, contextVersion: CONTEXT_VERSION, messageRevision: state.revision, model: request.model });
  }
}

/**
 * Opens the stream under the round's own deadline and the turn's signal, validates it, settles it.
 * A refusal attested before anything streamed settles at zero and throws `CallRejectedError`.
 */
async function streamAndSettle(env: TurnEnv, state: TurnState, call: StepCall, client: ModelClient, prepared: PreparedCall, operationId: string): Promise<StepDone> {
  const { engine } = env;
  const round = new AbortController();
  // Only this function aborts the round (the turn's abort, the round's timer, its end), so each
  // abort interrupts the pending pull itself: no listener on the round's own signal.
  const racer = abortRacer(round.signal);
  const stop = (reason: unknown) => {
    round.abort(reason);
    racer.interrupt();
  };
  const onTurnAbort = () => stop(env.signal.reason);
  env.signal.addEventListener("abort", onTurnAbort, { once: true });
  if (env.signal.aborted) round.abort(env.signal.reason);
  // One timer for the round's own deadline, released with the round; never armed for a stopped round.
  const cancelTimer = round.signal.aborted
    ? undefined
    : startTimer(engine.clock, engine.limits.roundTimeoutMs, () => stop(new AbortedError("timeout")), round.signal);
  const seen: StreamSeen = { content: 0, usage: undefined };
  let output: StepOutput | undefined;
  let rejected: { readonly proof: CallRejectedError["proof"]; readonly error: ProviderError } | undefined;
  try {
    if (round.signal.aborted) {
      await prepared.cancel("aborted");
      throw abortReason(round.signal);
    }
    const stream = await prepared.open(round.signal);
    output = await collectStep(stream, state.callIds, racer.race, seen);
  } catch (error) {
    const proof = attestedRejection(error, client, call.choice, seen, env.signal);
    if (proof === undefined) {
      // No effect of this round is kept; what was sent is on the journal with unknown usage.
      await prepared.settle({ status: "unknown" }).catch(() => undefined);
      throw classify(call, client, error, env.signal);
    }
    rejected = { proof, error: error as ProviderError };
  } finally {
    cancelTimer?.();
    env.signal.removeEventListener("abort", onTurnAbort);
    round.abort(RELEASED);
  }
  if (rejected || !output) {
    // An attested refusal before anything streamed is settled at zero, then reported as the marker.
    const receipt = await settleCall(env, state, call, prepared, { status: "known", usage: ZERO_USAGE }, "none");
    const { proof, error } = rejected as NonNullable<typeof rejected>;
    throw new CallRejectedError({ proof, callKind: call.kind, providerError: error, receipt, operationId });
  }
  for (const c of output.toolCalls) state.callIds.add(c.id);
  const receipt = await settleCall(env, state, call, prepared, output.evidence, output.stopReason);
  return { output, receipt, operationId };
}

/** Settles a call once (priced, journal completed, cost trail); a failure is uncertain with its cause. */
async function settleCall(env: TurnEnv, state: TurnState, call: StepCall, prepared: PreparedCall, evidence: UsageEvidence, stop: string): Promise<CostReceipt> {
  let receipt: CostReceipt;
  try {
    receipt = await prepared.settle(evidence);
  } catch (error) {
    if (error instanceof AuditFailedError) throw new UncertainTurnError("audit", error.message, error);
    const cause =
      error instanceof UnsettledCallError
        ? `call:${call.kind}:unsettled:${stop}`
        : error instanceof SettlementConflictError
          ? `call:${call.kind}:settlement_conflict`
          : `call:${call.kind}:error`;
    throw new UncertainTurnError(cause, (error as Error).message, error);
  }
  state.addUsage(receipt.usage);
  env.emit({ type: "cost.receipt", turnId: env.input.turnId, receipt });
  return receipt;
}

/** Each provider search result is one access event: the provider and the count, never the query. */
async function recordSearches(env: TurnEnv, done: StepDone): Promise<void> {
  for (const block of done.output.blocks) {
    if (block.type !== "provider_tool_result") continue;
    await durable(env.engine.audit, {
      trail: "access",
      scope: env.input.scope,
      sessionId: env.input.sessionId,
      turnId: env.input.turnId,
      callId: done.operationId,
      at: env.engine.clock.now(),
      tool: "web_search",
      resource: `provider:${block.provider}:${block.resultCount} results`,
      action: "read",
    });
  }
}

function classify(call: StepCall, client: ModelClient, error: unknown, turnSignal: AbortSignal): UncertainTurnError {
  if (turnSignal.aborted) {
    const reason = abortReason(turnSignal);
    const cause = reason instanceof AbortedError && reason.reason === "deadline" ? "deadline" : "cancelled";
    return new UncertainTurnError(cause, reason.message, reason);
  }
  if (error instanceof AbortedError && error.reason === "timeout") return new UncertainTurnError(`call:${call.kind}:aborted`, "the model round timed out", error);
  if (error instanceof StreamInvalidError) return new UncertainTurnError(`call:${call.kind}:invalid:none:${error.rule}`, error.message, error);
  if (error instanceof StreamTornError) return new UncertainTurnError(`call:${call.kind}:torn:none`, error.message, error);
  // Only an attested refusal, settled at zero, is `rejected:<proof>`: a proof the evidence contradicts is an ordinary failure.
  if (error instanceof ProviderError) return new UncertainTurnError(`call:${call.kind}:${error.kind}:none`, error.message, error);
  return new UncertainTurnError(`call:${call.kind}:error`, `${client.id}: ${(error as Error)?.message ?? String(error)}`, error);
}
