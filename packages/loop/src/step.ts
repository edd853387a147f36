import {
  type BudgetCapName,
  type CallKind,
  type CostReceipt,
  deepFreeze,
  type ModelChoice,
  type ModelRequest,
  type Sensitivity,
  type StepPrePatch,
  type ProviderError,
  type RejectionKind,
  type Tier,
  trailJoin,
  type UnpricedReason,
  trailKind,
} from "@alma-harness/core";
import { CallRefusedError, type StepOutput, UncertainCallError } from "@alma-harness/execution";
import { commitBefore, durable } from "./audit.js";
import { observeCache } from "./cache-hygiene.js";
import type { TurnEnv } from "./env.js";
import { CallRejectedError, UncertainTurnError } from "./errors.js";
import type { BudgetMetric } from "./engine.js";
import { answerBy } from "./limits.js";
import { CONTEXT_VERSION, type TurnState } from "./state.js";
import { trailBase } from "./trail.js";

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

/** A call refused at zero cost before anything was claimed or sent: its slot is given back. */
export type StepRefused =
  | { readonly status: "refused"; readonly reason: "cap"; readonly cap: BudgetCapName }
  | {
      readonly status: "refused";
      readonly reason: "unpriced";
      readonly missing: UnpricedReason;
      readonly model: string;
    };

/**
 * The trusted settled rejection marker: a provider refused the call before anything streamed,
 * attested (rate limit, overload) or as its own zero-usage context refusal, settled at zero.
 */
export interface Rejection {
  readonly proof: RejectionKind | "context_window";
  readonly callKind: CallKind;
  readonly providerError: ProviderError;
  readonly receipt: CostReceipt;
  readonly operationId: string;
}

/** How one governed round ended, as data. Only uncertainty is thrown (`UncertainTurnError`). */
export type StepResult =
  | { readonly status: "settled"; readonly done: StepDone }
  | StepRefused
  | { readonly status: "rejected"; readonly rejection: Rejection };

/**
 * One governed model round: `step:pre` at the hook boundary (main steps; narrow only), a call slot
 * reserved against `maxCalls`, then the one governed call of `execution` (`calls.run`: preflight,
 * claim and reservation, trails, dispatch, validated stream, settlement), then the search results
 * on the access trail. A refused call (unpriced, cap) throws `CallRefusedError` with nothing sent
 * and its slot given back; a settled pre-stream refusal throws `CallRejectedError`; everything
 * uncertain throws `UncertainTurnError` with its cause.
 */
export async function runModelStep(
  env: TurnEnv,
  state: TurnState,
  call: StepCall,
): Promise<StepResult> {
  const { engine, input } = env;
  const client = engine.clients.get(call.choice.clientId);
  if (!client) throw new UncertainTurnError("loop", `no client "${call.choice.clientId}"`);
  const request = call.kind === "main" ? await applyStepPre(env, call) : call.request;
  // Reserved synchronously, so concurrent children can never overrun the root's call limit.
  if (state.callsUsed >= engine.limits.maxCalls)
    throw new UncertainTurnError(`call:${call.kind}:call_limit`, "no call is left in this turn");
  state.callsUsed += 1;
  state.operations += 1;
  const operationId = `${input.turnId}:${call.kind}:${state.operations}`;
  const identity = {
    scope: input.scope,
    sessionId: input.sessionId,
    trailSession: env.rec.trail.session,
    rootKey: input.rootKey,
    turnId: input.turnId,
    operationId,
    kind: call.kind,
    ...(input.admissionId !== undefined ? { admissionId: input.admissionId } : {}),
  };
  const main = call.kind === "main";
  const answerByAt = answerBy(env.input);
  let outcome: Awaited<ReturnType<typeof engine.calls.run>>;
  try {
    outcome = await engine.calls.run(identity, client, call.choice, request, {
      account: state.account,
      signal: env.signal,
      roundTimeoutMs: engine.limits.roundTimeoutMs,
      ...(answerByAt !== undefined ? { answerByAt } : {}),
      route: {
        tier: call.tier,
        sensitivity: call.sensitivity,
        ...(call.parentCallId ? { parentCallId: env.rec.trail.callId(call.parentCallId) } : {}),
      },
      seenCallIds: state.callIds,
      ...(main
        ? {
            lifecycle: {
              step: call.step,
              contextVersion: CONTEXT_VERSION,
              messageRevision: state.log.revision,
            },
          }
        : {}),
      ...(main
        ? {
            onDispatch: () =>
              env.rec.emit({
                type: "model.request",
                turnId: input.turnId,
                step: call.step,
                contextVersion: CONTEXT_VERSION,
                messageRevision: state.log.revision,
                model: request.model,
              }),
          }
        : {}),
    });
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
    return {
      status: "rejected",
      rejection: { proof, callKind: call.kind, providerError: error, receipt, operationId },
    };
  }
  if (main) await observeCache(env, call.step, request, outcome.receipt.usage);
  for (const c of outcome.output.toolCalls) state.callIds.add(c.id);
  const done = { output: outcome.output, receipt: outcome.receipt, operationId };
  await recordSearches(env, done);
  return { status: "settled", done };
}

/** The budget metric a zero-cost refusal stops the turn on. */
export function refusedMetric(refused: StepRefused): BudgetMetric {
  return refused.reason === "cap" ? refused.cap : "unpriced";
}

/** A refusal as the host-facing error a child gateway throws (`delegate`'s throwing contract). */
export function refusalError(refused: StepRefused): CallRefusedError {
  return refused.reason === "cap"
    ? new CallRefusedError(
        "cap",
        `the ${refused.cap} cap leaves no room for this call; nothing was sent`,
        { cap: refused.cap },
      )
    : new CallRefusedError(
        "unpriced",
        `${refused.model} cannot be priced (${refused.missing}); nothing was sent`,
        { missing: refused.missing },
      );
}

/** A settled rejection nobody reacts to: uncertain, cause `call:<kind>:rejected:<proof>`. */
export function rejectionError(rejection: Rejection): CallRejectedError {
  return new CallRejectedError(rejection);
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
  if (attempt === "unsent" && env.engine.limits.callAttempts !== undefined)
    attempt = (await env.engine.calls.provenUnsent(state.account, env.input.scope, operationId))
      ? "retry"
      : undefined;
  return new UncertainTurnError(error.uncertainCause, error.message, error.cause, attempt);
}

/** Each provider search result is one access event: the provider and the count, never the query. */
async function recordSearches(env: TurnEnv, done: StepDone): Promise<void> {
  for (const block of done.output.blocks) {
    if (block.type !== "provider_tool_result") continue;
    await durable(env.engine.audit, {
      trail: "access",
      ...trailBase(env.rec.trail, env.engine.clock.now(), done.operationId),
      tool: trailKind("web_search"),
      resource: trailJoin(
        trailKind("provider"),
        env.rec.trail.idOrHash(block.provider),
        trailKind("results"),
        block.resultCount,
      ),
      action: "read",
    });
  }
}

/**
 * Field names the context trail may carry verbatim: what `step:pre` may return and what a request
 * holds. Any other key a hook returns is recorded as `unknown_field`, so nothing a hook writes
 * (a schema, a prompt) reaches the trail through a key.
 */
const NAMED_FIELDS: ReadonlySet<string> = new Set([
  "maxOutputTokens",
  "model",
  "clientId",
  "tools",
  "output",
  "toolChoice",
  "temperature",
  "cache",
  "reasoning",
  "serviceTier",
  "system",
  "messages",
  "providerTools",
  "deferredTools",
  "deferredToolSpecs",
] satisfies readonly (keyof StepPrePatch | keyof ModelRequest)[]);

/**
 * The hook boundary. `step:pre` sees a frozen snapshot of the choice and the request; of what it
 * returns only a lower `maxOutputTokens` is honored. Routing, tools, output schema, tool choice
 * (its absence included), temperature and cache are pinned: an attempt is refused. Every field it
 * touched lands on the context trail, by name only, before the request goes out as pinned.
 */
async function applyStepPre(env: TurnEnv, call: StepCall): Promise<ModelRequest> {
  const hook = env.engine.hooks["step:pre"];
  if (!hook) return call.request;
  let patch: StepPrePatch | undefined;
  await commitBefore(env.engine);
  try {
    patch = await hook(
      deepFreeze({
        turnId: env.input.turnId,
        step: call.step,
        choice: call.choice,
        request: call.request,
      }),
    );
  } catch (error) {
    throw new UncertainTurnError("hook:step:pre", "the step:pre hook threw", error);
  }
  if (patch === undefined || patch === null) return call.request;
  if (typeof patch !== "object" || Array.isArray(patch))
    throw new UncertainTurnError("hook:step:pre", "step:pre must return an object or nothing");
  let request = call.request;
  const touched: { field: string; honored: boolean }[] = [];
  for (const key of Object.keys(patch)) {
    const field = NAMED_FIELDS.has(key) ? key : "unknown_field";
    let honored = false;
    if (key === "maxOutputTokens") {
      // Read once: a getter cannot show the check one value and the request another.
      const value: unknown = (patch as Record<string, unknown>)[key];
      honored =
        typeof value === "number" &&
        Number.isSafeInteger(value) &&
        value >= 1 &&
        value < request.maxOutputTokens;
      if (honored) request = deepFreeze({ ...request, maxOutputTokens: value as number });
    }
    touched.push({ field, honored });
  }
  for (const { field, honored } of touched) {
    await durable(env.engine.audit, {
      trail: "context",
      ...trailBase(env.rec.trail, env.engine.clock.now()),
      step: call.step,
      field: trailKind(field),
      decision: honored ? "honored" : "refused",
    });
  }
  return request;
}
