import {
  type ExecutionRecord,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  normalizeBudgetCaps,
  normalizeModelChoice,
  type ReserveResult,
  type ResultRecord,
  ScopeFencedError,
  sessionPseudonym,
  trailHash,
  type UncertainCause,
} from "@alma-harness/core";
import {
  type CallIdentity,
  type CallOutcome,
  GovernedCalls,
  UncertainCallError,
} from "@alma-harness/execution";
import {
  type GovernedStepRunnerConfig,
  type ResolvedStepConfig,
  resolveStepConfig,
} from "./config.js";
import { StepCallConflictError, StepCallErasedError, StepCallInProgressError } from "./errors.js";
import { envelopeOf, evaluate, resultOf, type StepResult, type StoredResult } from "./outcome.js";
import {
  type NormalizedStep,
  normalizeStep,
  type StepRequest,
  stepBinding,
  stepOperationId,
} from "./request.js";

/** The one entry point: a governed structured call per request; a retry under its key replays. */
export interface GovernedStepRunner {
  /**
   * Runs one governed call, or answers the stored result of the key. Rejects with `ValidationError`
   * (bad input, a `toolChoice` naming no advertised tool, a temperature outside 0..2), a
   * `ProviderError` (`unsupported`: the adapter cannot honor the request), `StepCallConflictError`
   * (the key was used with other content), `StepCallInProgressError` (another caller holds the
   * key's call now) or `StepCallErasedError`, each before any dispatch; a store that fails before
   * anything of the call is durable rejects with its own error. Everything else is a `StepResult`.
   */
  run(request: StepRequest): Promise<StepResult>;
  /** The stored result of a key (marked replayed), or `undefined` while none is stored. Never dispatches. */
  read(scope: StepRequest["scope"], idempotencyKey: string): Promise<StepResult | undefined>;
}

/** A call's identity: the operation (the host's key), its one attempt, and the journal's call id. */
interface StepIds {
  readonly operationId: string;
  readonly attemptId: string;
  readonly callId: string;
}

function idsOf(operationId: string): StepIds {
  const attemptId = `${operationId}:a1`;
  return { operationId, attemptId, callId: `${attemptId}:c1` };
}

/**
 * Builds a step runner: one governed model call for extraction or classification, with no session
 * append, no recall and no memory extraction. The call itself is `GovernedCalls.run` of
 * `@alma-harness/execution` (pricing, the claim, reservations, settlement, receipts, trails); this
 * runner validates the request, binds the key, keeps the result and reads the answer against the
 * schema. Bad configuration throws here, synchronously.
 */
export function createGovernedStepRunner(input: GovernedStepRunnerConfig): GovernedStepRunner {
  const config = resolveStepConfig(input);
  const { stores } = config;
  const calls = new GovernedCalls({
    journal: stores.journal,
    settlements: stores.settlements,
    spend: stores.spend,
    prices: input.prices,
    caps: normalizeBudgetCaps(input.caps ?? {}),
    policyVersion: input.policyVersion,
    audit: stores.audit,
    consumers: input.consumers ?? [],
    dispatchDeadlineMs: config.dispatchDeadlineMs,
    clock: config.clock,
    ...(stores.usageInbox ? { usageInbox: stores.usageInbox } : {}),
    cacheKey: ({ scope }) => trailHash(config.trailKey, scope, "prompt_cache_key"),
  });
  return Object.freeze({
    run: (request: StepRequest) => {
      let step: NormalizedStep;
      try {
        step = normalizeStep(request, config.maxInputChars);
      } catch (error) {
        return Promise.reject(error);
      }
      const work = () => execute(config, calls, step);
      return stores.unit ? stores.unit(work) : work();
    },
    read: async (scope: StepRequest["scope"], idempotencyKey: string) => {
      const operationId = stepOperationId(scope, idempotencyKey);
      const record = await stores.rootResults.get(scope, operationId, config.clock.now());
      return record?.state === "stored" ? resultOf(operationId, record.envelope) : undefined;
    },
  });
}

async function execute(
  config: ResolvedStepConfig,
  calls: GovernedCalls,
  step: NormalizedStep,
): Promise<StepResult> {
  const ids = idsOf(stepOperationId(step.scope, step.idempotencyKey));
  const binding = stepBinding(step, config.configRevision);
  const found = await config.stores.rootResults.get(
    step.scope,
    ids.operationId,
    config.clock.now(),
  );
  if (found !== undefined) return answerExisting(config, step, ids, binding, found);
  const routed = route(config, step);
  if (routed === undefined)
    return {
      status: "refused",
      operationId: ids.operationId,
      reason: "not_admitted",
      replayed: false,
    };
  // The adapter's own check (no I/O): a request it cannot honor is refused before anything is durable.
  routed.client.validate(routed.request);
  // An operator's fence on the tenant or the person: read before the reservation (a fence placed
  // after this read does not stop this call, the bound a turn's dispatch has too).
  if (((await config.stores.admissions?.scopeFences(step.scope)) ?? []).length > 0)
    throw new ScopeFencedError("the scope is fenced by an operator: no new call is made");
  const reserved = await reserve(config, step, ids, binding);
  if (reserved !== "ours") return answerExisting(config, step, ids, binding, reserved);
  const result = await callOnce(config, calls, step, ids, routed);
  if (result.status === "reconciliation_required") return result;
  return store(config, step, ids, result);
}

/** The policy's choice and the request it makes; `undefined` when the intent cannot be routed. */
function route(
  config: ResolvedStepConfig,
  step: NormalizedStep,
):
  | { readonly choice: ModelChoice; readonly client: ModelClient; readonly request: ModelRequest }
  | undefined {
  let choice: ModelChoice;
  try {
    choice = normalizeModelChoice(config.policy.resolve({ ...step.intent }));
  } catch {
    return undefined;
  }
  const client = config.clients.get(choice.clientId);
  if (!client) return undefined;
  const request: ModelRequest = Object.freeze({
    model: choice.model,
    system: step.system === undefined ? [] : [{ type: "text" as const, text: step.system }],
    messages: step.messages,
    tools: step.tools,
    output: step.output,
    maxOutputTokens: Math.min(
      choice.maxOutputTokens,
      step.maxOutputTokens ?? choice.maxOutputTokens,
    ),
    ...(step.toolChoice !== undefined ? { toolChoice: step.toolChoice } : {}),
    ...(step.temperature !== undefined ? { temperature: step.temperature } : {}),
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
  return { choice, client, request };
}

/**
 * Reserves the key's result slot, first-wins. A reserve that throws is read back: nothing there
 * rethrows the store's error (nothing is durable; the same request may be retried); a slot
 * reserved under this binding with no claim in the journal is taken as this call's own (its
 * acknowledgement lost): the journal's first-wins claim still lets only one caller dispatch.
 */
async function reserve(
  config: ResolvedStepConfig,
  step: NormalizedStep,
  ids: StepIds,
  binding: string,
): Promise<"ours" | ResultRecord> {
  const now = config.clock.now();
  let reserved: ReserveResult;
  try {
    reserved = await config.stores.rootResults.reserve({
      scope: step.scope,
      resultId: ids.operationId,
      sessionId: step.sessionId ?? ids.operationId,
      binding,
      sensitivity: step.intent.sensitivity,
      maxChars: config.maxResultChars,
      expiresAt: now + config.resultRetentionMs,
      createdAt: now,
    });
  } catch (error) {
    const back = await config.stores.rootResults
      .get(step.scope, ids.operationId, now)
      .catch(() => undefined);
    if (back === undefined) throw error;
    if (
      back.state === "reserved" &&
      back.binding === binding &&
      (await config.stores.journal.get(step.scope, ids.callId)) === undefined
    )
      return "ours";
    return back;
  }
  return reserved.status === "reserved" ? "ours" : reserved.record;
}

/**
 * A slot that exists before this call: its stored result replays; another binding conflicts; an
 * erased or expired one is never answered; a reserved one is another caller's call in progress,
 * or, when the journal shows that call ended (or it never claimed within the dispatch deadline),
 * a call whose result was never stored: `reconciliation_required`, never sent again.
 */
async function answerExisting(
  config: ResolvedStepConfig,
  step: NormalizedStep,
  ids: StepIds,
  binding: string,
  record: ResultRecord,
): Promise<StepResult> {
  if (record.state === "erased" || record.state === "expired")
    throw new StepCallErasedError(ids.operationId, record.state);
  if (record.binding !== binding) throw new StepCallConflictError(ids.operationId);
  if (record.state === "stored") {
    const stored = resultOf(ids.operationId, record.envelope);
    return (
      stored ?? {
        status: "reconciliation_required",
        operationId: ids.operationId,
        cause: "result_store",
        replayed: true,
      }
    );
  }
  const journal = await config.stores.journal.get(step.scope, ids.callId);
  const now = config.clock.now();
  const reservedAt = record.expiresAt - config.resultRetentionMs;
  if (journal === undefined && now < reservedAt + config.dispatchDeadlineMs)
    throw new StepCallInProgressError(ids.operationId);
  if (journal !== undefined && inFlight(journal) && now < journal.deadlineAt)
    throw new StepCallInProgressError(ids.operationId);
  // Completed in the journal, its result not stored yet: its caller writes the cost trail and then
  // the result right after, so for one round's timeout it is still that caller's to finish.
  if (journal?.state === "completed" && now < journal.updatedAt + config.roundTimeoutMs)
    throw new StepCallInProgressError(ids.operationId);
  return {
    status: "reconciliation_required",
    operationId: ids.operationId,
    cause: "result_store",
    replayed: true,
  };
}

/**
 * Whether a journal record may still be moving under a live caller: claimed, dispatching, or
 * received with usage being settled. A record received with `unknown` usage is a call its caller
 * already gave up on (the governed call writes that on a failure): it ends here as uncertain.
 */
function inFlight(record: ExecutionRecord): boolean {
  if (record.state === "received") return record.evidence?.status !== "unknown";
  return (
    record.state === "prepared" || record.state === "dispatching" || record.state === "settled"
  );
}

async function callOnce(
  config: ResolvedStepConfig,
  calls: GovernedCalls,
  step: NormalizedStep,
  ids: StepIds,
  routed: {
    readonly choice: ModelChoice;
    readonly client: ModelClient;
    readonly request: ModelRequest;
  },
): Promise<StepResult> {
  const sessionId = step.sessionId ?? ids.operationId;
  const identity: CallIdentity = {
    scope: step.scope,
    sessionId,
    trailSession: sessionPseudonym(config.trailKey, step.scope, sessionId),
    rootKey: ids.operationId,
    turnId: ids.operationId,
    operationId: ids.callId,
    kind: "single",
    operation: { operationId: ids.operationId, attemptId: ids.attemptId },
  };
  let outcome: CallOutcome;
  try {
    outcome = await calls.run(identity, routed.client, routed.choice, routed.request, {
      account: calls.account(),
      signal: step.signal ?? new AbortController().signal,
      roundTimeoutMs: config.roundTimeoutMs,
      route: { tier: step.intent.tier, sensitivity: step.intent.sensitivity },
      seenCallIds: new Set(),
    });
  } catch (error) {
    const cause: UncertainCause =
      error instanceof UncertainCallError ? error.uncertainCause : "call:single:error";
    return {
      status: "reconciliation_required",
      operationId: ids.operationId,
      cause,
      replayed: false,
    };
  }
  return resultOfOutcome(config, step, ids, outcome);
}

function resultOfOutcome(
  config: ResolvedStepConfig,
  step: NormalizedStep,
  ids: StepIds,
  outcome: CallOutcome,
): StoredResult {
  const base = { operationId: ids.operationId, replayed: false } as const;
  if (outcome.status === "refused") {
    return outcome.reason === "cap"
      ? { ...base, status: "refused", reason: "cap", cap: outcome.cap }
      : { ...base, status: "refused", reason: "unpriced", missing: outcome.missing };
  }
  if (outcome.status === "rejected")
    return { ...base, status: "refused", reason: "rejected", receipt: outcome.receipt };
  const { output, receipt } = outcome;
  const read = evaluate(step, output);
  if ("object" in read) {
    // The stored envelope is bounded: an answer larger than the result ceiling is invalid, never truncated.
    if (JSON.stringify(read.object).length > config.maxResultChars - 2_048)
      return {
        ...base,
        status: "invalid",
        reason: "output_chars",
        stopReason: output.stopReason,
        receipt,
      };
    return {
      ...base,
      status: "completed",
      object: read.object,
      stopReason: output.stopReason,
      receipt,
    };
  }
  return { ...base, status: "invalid", ...read, stopReason: output.stopReason, receipt };
}

/**
 * Stores the result once, then commits (a store set that groups writes). A put whose
 * acknowledgement was lost is read back; a result that cannot be made durable is
 * `reconciliation_required` (cause `result_store` or `commit`): its call was paid, and a retry
 * under the key never sends it again.
 */
async function store(
  config: ResolvedStepConfig,
  step: NormalizedStep,
  ids: StepIds,
  result: StoredResult,
): Promise<StepResult> {
  const envelope = envelopeOf(result);
  try {
    await config.stores.rootResults.put(step.scope, ids.operationId, envelope, config.clock.now());
  } catch {
    const back = await config.stores.rootResults
      .get(step.scope, ids.operationId, config.clock.now())
      .catch(() => undefined);
    if (back?.state !== "stored")
      return {
        status: "reconciliation_required",
        operationId: ids.operationId,
        cause: "result_store",
        replayed: false,
      };
  }
  try {
    await config.stores.barrier?.commit();
  } catch {
    return {
      status: "reconciliation_required",
      operationId: ids.operationId,
      cause: "commit",
      replayed: false,
    };
  }
  return result;
}
