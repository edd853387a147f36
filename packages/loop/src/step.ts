import {
  type CallKind,
  type CostReceipt,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  ProviderError,
  type StepPrePatch,
} from "@alma-harness/core";
import { CallRefusedError, UnsettledCallError } from "@alma-harness/execution";
import { durable } from "./audit.js";
import { AbortedError, abortReason, raceAbort } from "./cancel.js";
import type { TurnEnv } from "./env.js";
import { StreamInvalidError, StreamTornError, UncertainTurnError } from "./errors.js";
import { CONTEXT_VERSION, deepFreeze, type TurnState } from "./state.js";
import { collectStep, type StepOutput } from "./stream-validate.js";

export interface StepCall {
  readonly kind: CallKind;
  readonly step: number;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
  readonly parentCallId?: string;
  readonly sensitivity: import("@alma-harness/core").Sensitivity;
  readonly tier: import("@alma-harness/core").Tier;
}

export interface StepDone {
  readonly output: StepOutput;
  readonly receipt: CostReceipt;
  readonly operationId: string;
}

/**
 * One governed model round: `step:pre` at the hook boundary (narrow only), the routing trail, the
 * journaled call, the validated stream, the settled receipt. A refused call (unpriced, cap) throws
 * `CallRefusedError` with nothing sent; everything uncertain throws `UncertainTurnError` with its cause.
 */
export async function runModelStep(env: TurnEnv, state: TurnState, call: StepCall): Promise<StepDone> {
  const { engine, input } = env;
  const client = engine.clients.get(call.choice.clientId);
  if (!client) throw new UncertainTurnError("loop", `no client "${call.choice.clientId}"`);
  const request = call.kind === "main" ? await applyStepPre(env, call) : call.request;
  const operationId = `${input.turnId}:${call.kind}:${state.ledger.calls + 1}`;
  const now = engine.clock.now();
  const identity = { scope: input.scope, sessionId: input.sessionId, rootKey: input.rootKey, turnId: input.turnId, operationId, kind: call.kind };
  let prepared: Awaited<ReturnType<typeof engine.calls.prepare>>;
  try {
    prepared = await engine.calls.prepare(identity, client, call.choice, request, state.ledger, now);
  } catch (error) {
    if (error instanceof CallRefusedError) throw error;
    if (error instanceof ProviderError) throw new UncertainTurnError(`call:${call.kind}:request_invalid`, error.message, error);
    throw new UncertainTurnError(`call:${call.kind}:error`, "the call could not be claimed", error);
  }
  await record(env, state, call, operationId, request);
  return await streamAndSettle(env, state, call, client, prepared, operationId);
}

async function record(env: TurnEnv, state: TurnState, call: StepCall, operationId: string, request: ModelRequest): Promise<void> {
  const { engine, input } = env;
  const base = { scope: input.scope, sessionId: input.sessionId, turnId: input.turnId, callId: operationId, at: engine.clock.now() };
  await durable(engine.audit, {
    ...base,
    trail: "routing",
    kind: call.kind,
    tier: call.tier,
    sensitivity: call.sensitivity,
    clientId: call.choice.clientId,
    model: call.choice.model,
    cacheTtl: call.choice.cache === false ? "off" : call.choice.cache.ttl,
    ...(call.choice.reasoning ? { reasoning: call.choice.reasoning } : {}),
    ...(call.choice.serviceTier ? { servedTier: call.choice.serviceTier } : {}),
    ...(call.parentCallId ? { parentCallId: call.parentCallId } : {}),
  });
  if (call.kind !== "main") return;
  await durable(engine.audit, {
    ...base,
    trail: "lifecycle",
    action: "model.request",
    step: call.step,
    contextVersion: CONTEXT_VERSION,
    messageRevision: state.revision,
  });
  env.emit({ type: "model.request", turnId: input.turnId, step: call.step, contextVersion: CONTEXT_VERSION, messageRevision: state.revision, model: request.model });
}

async function streamAndSettle(
  env: TurnEnv,
  state: TurnState,
  call: StepCall,
  client: ModelClient,
  prepared: import("@alma-harness/execution").PreparedCall,
  operationId: string,
): Promise<StepDone> {
  const { engine } = env;
  const round = new AbortController();
  const onTurnAbort = () => round.abort(env.signal.reason);
  env.signal.addEventListener("abort", onTurnAbort, { once: true });
  if (env.signal.aborted) round.abort(env.signal.reason);
  engine.clock.sleep(engine.limits.roundTimeoutMs, round.signal).then(
    () => round.abort(new AbortedError("timeout")),
    () => undefined,
  );
  let output: StepOutput;
  try {
    if (round.signal.aborted) {
      await prepared.cancel("aborted");
      throw abortReason(round.signal);
    }
    const stream = await prepared.open(round.signal);
    output = await collectStep(stream, state.callIds, (p) => raceAbort(p, round.signal));
  } catch (error) {
    await prepared.settle({ status: "unknown" }).catch(() => undefined);
    throw classify(call, client, error, env.signal);
  } finally {
    env.signal.removeEventListener("abort", onTurnAbort);
    round.abort();
  }
  for (const c of output.toolCalls) state.callIds.add(c.id);
  let receipt: CostReceipt;
  try {
    receipt = await prepared.settle(output.evidence);
  } catch (error) {
    const cause = error instanceof UnsettledCallError ? `call:${call.kind}:unsettled:${output.stopReason}` : `call:${call.kind}:error`;
    throw new UncertainTurnError(cause, (error as Error).message, error);
  }
  state.addUsage(receipt.usage);
  env.emit({ type: "cost.receipt", turnId: env.input.turnId, receipt });
  return { output, receipt, operationId };
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
  if (error instanceof ProviderError) {
    const proof = error.rejection ? `rejected:${error.rejection.kind}` : `${error.kind}:none`;
    return new UncertainTurnError(`call:${call.kind}:${proof}`, error.message, error);
  }
  return new UncertainTurnError(`call:${call.kind}:error`, `${client.id}: ${(error as Error)?.message ?? String(error)}`, error);
}

const PINNED: readonly (keyof StepPrePatch)[] = ["model", "clientId", "tools", "output", "toolChoice", "temperature", "cache", "reasoning"];

/**
 * The hook boundary. `step:pre` sees a frozen snapshot; of what it returns only a lower
 * `maxOutputTokens` is honored. Every field it touched lands on the context trail, by name only.
 */
async function applyStepPre(env: TurnEnv, call: StepCall): Promise<ModelRequest> {
  const hook = env.engine.hooks["step:pre"];
  if (!hook) return call.request;
  let patch: StepPrePatch | undefined;
  try {
    patch = await hook(deepFreeze({ turnId: env.input.turnId, step: call.step, choice: call.choice, request: call.request }));
  } catch (error) {
    throw new UncertainTurnError("hook:step:pre", "the step:pre hook threw", error);
  }
  if (patch === undefined || patch === null) return call.request;
  if (typeof patch !== "object") throw new UncertainTurnError("hook:step:pre", "step:pre must return an object or nothing");
  let request = call.request;
  for (const field of Object.keys(patch)) {
    const value = (patch as Record<string, unknown>)[field];
    let honored = false;
    if (field === "maxOutputTokens") {
      honored = Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) < request.maxOutputTokens;
      if (honored) request = deepFreeze({ ...request, maxOutputTokens: value as number });
    } else if (!PINNED.includes(field as keyof StepPrePatch)) {
      honored = false;
    }
    await durable(env.engine.audit, {
      trail: "context",
      scope: env.input.scope,
      sessionId: env.input.sessionId,
      turnId: env.input.turnId,
      at: env.engine.clock.now(),
      step: call.step,
      field,
      decision: honored ? "honored" : "refused",
    });
  }
  return request;
}
