import {
  type ErasureReport,
  type ModelChoice,
  type Msg,
  normalizeModelChoice,
  type Scope,
  type ScopeFence,
  ScopeFencedError,
  type ScopeFenceReason,
  type ScopeFenceTarget,
  utf8Length,
} from "@alma-harness/core";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type Engine, type TurnOutcome, type TurnResult } from "@alma-harness/loop";
import { closedObject as closedRecord } from "@alma-harness/core/stores";
import { claimTurn } from "./claim.js";
import {
  answerByAt,
  type ConversationConfig,
  type EngineOptions,
  type ResolvedConfig,
  resolveConfig,
} from "./config.js";
import { eraseScope, eraseSession } from "./erasure.js";
import { ConversationConflictError } from "./errors.js";
import {
  type EventsApi,
  eventsApi,
  type RecordEventsRequest,
  type RecordEventsResult,
} from "./events.js";
import { type NormalizedRequest, normalizeRequest, type RunTurnRequest } from "./input.js";
import { bindingOf, conversationRootKey, promptCacheKey } from "./keys.js";
import {
  type ExpiredRelease,
  listUnresolved,
  releaseExpired,
  releaseExpiredEvents,
  type UnresolvedPage,
} from "./maintenance.js";
import { readRoot } from "./read.js";
import { renderEvents } from "./render.js";
import { StepOutputs } from "./step-outputs.js";
import { type ConversationStream, streamConversation } from "./stream.js";
import { type TurnRef, uncertain } from "./uncertain.js";
import { type AuditPage, readTrails, type SessionTrailQuery } from "./trails.js";
import type { ConversationView, FinalEnvelope } from "./views.js";

export interface ConversationRunner {
  runTurn(request: RunTurnRequest): Promise<ConversationView>;
  streamTurn(request: RunTurnRequest): ConversationStream;
  read(scope: Scope, rootKey: string): Promise<ConversationView | null>;
  recordEvents(request: RecordEventsRequest): Promise<RecordEventsResult>;
  /** Erases the session in every store (see `SessionErasure`): a turn holding it is fenced; idempotent. */
  eraseSession(scope: Scope, sessionId: string): Promise<ErasureReport>;
  /** Erases everything of the scope in every store, the same way. */
  eraseScope(scope: Scope): Promise<ErasureReport>;
  /**
   * A scope's trail records, filtered by the real session id: the one place a session id is
   * translated to the pseudonym the trails store (`sessionPseudonym` with this runner's key).
   */
  trails(scope: Scope, query?: SessionTrailQuery): Promise<AuditPage>;
  /**
   * Frees admissions fifteen minutes past their deadline (turns and event batches) and returns them;
   * each turn among them is reported to `onUncertainTurn` (cause `expired`).
   */
  releaseExpired(scope?: Scope): Promise<readonly ExpiredRelease[]>;
  /**
   * Releases the session's event admission (a `recordEvents` batch) fifteen minutes past its
   * deadline, active or uncertain, never a turn's; returns what it released (none or one).
   */
  releaseExpiredEvents(request: {
    readonly scope: Scope;
    readonly sessionId: string;
  }): Promise<readonly ExpiredRelease[]>;
  /**
   * Fences a whole org (`{org}`) or one scope (`{org, uid}`), durably (spec: scope-fence): a new key
   * rejects with `ScopeFencedError` before admission, a stored key still replays, and a turn admitted
   * before ends `reconciliation_required` (cause `scope_fenced`) at its next claim, session append
   * or final result, dispatching nothing more. A second fence of the target keeps the first.
   */
  fenceScope(request: {
    readonly target: ScopeFenceTarget;
    readonly reason: ScopeFenceReason;
  }): Promise<ScopeFence>;
  /** Lifts exactly that target's fence (an org's fence does not lift a uid's); whether one was there. */
  liftScopeFence(target: ScopeFenceTarget): Promise<boolean>;
  /** `{org}`: every fence of the org; `{org, uid}`: the fences covering that scope (the org's and its own). */
  scopeFences(target: ScopeFenceTarget): Promise<readonly ScopeFence[]>;
  /** Journal records whose turn has no stored final result (in every state), a journal page at a time. */
  listUnresolved(
    scope: Scope,
    opts?: { readonly cursor?: string; readonly limit?: number },
  ): Promise<UnresolvedPage>;
  /** Fences expired journal records; never re-sends. */
  reconcileExpired(scope?: Scope): Promise<number>;
}

/** Builds the one entrypoint hosts use. Bad configuration throws here, synchronously. */
export function createConversationRunner(input: ConversationConfig): ConversationRunner {
  const config = resolveConfig(input);
  const { stores, clock } = config;
  const scopeCacheKey = promptCacheKey(config.trailKey);
  const calls = new GovernedCalls({
    journal: stores.journal,
    settlements: stores.settlements,
    spend: stores.spend,
    prices: config.prices,
    caps: config.capsNormalized,
    policyVersion: config.policyVersion,
    audit: stores.audit,
    consumers: config.consumers ?? [],
    clock,
    ...(stores.usageInbox ? { usageInbox: stores.usageInbox } : {}),
    // OpenAI's `prompt_cache_key`: the scope's keyed hash (`promptCacheKey`).
    cacheKey: ({ scope }) => scopeCacheKey(scope),
  });
  // The engine's options go to the engine as they came, compiled once there; the runner adds its own seams.
  const engine = createEngine({
    ...engineOptions(config),
    system: config.prompt,
    limits: {
      ...config.limits,
      maxCalls: config.maxCalls,
      ...(config.callAttempts !== undefined ? { callAttempts: config.callAttempts } : {}),
    },
    calls,
    audit: stores.audit,
    ...(stores.barrier ? { barrier: stores.barrier } : {}),
    clock,
    ids: config.ids,
  });
  const events = eventsApi(config);
  const runner: ConversationRunner = {
    runTurn: (request) => {
      let normalized: NormalizedRequest;
      try {
        normalized = normalizeRequest(request, config.maxInputChars, config.profileNames);
      } catch (error) {
        return Promise.reject(error);
      }
      return inUnit(config, () => execute(config, engine, events, normalized, normalized.signal));
    },
    streamTurn: (request) => {
      const normalized = normalizeRequest(request, config.maxInputChars, config.profileNames);
      return streamConversation(
        config,
        normalized,
        (outputs) =>
          inUnit(config, () =>
            execute(config, engine, events, normalized, normalized.signal, outputs),
          ),
        (scope, key) => readRoot(config, scope, key),
      );
    },
    read: (scope, rootKey) => readRoot(config, scope, rootKey),
    trails: (scope, query) => readTrails(config, scope, query),
    recordEvents: (request) => inUnit(config, () => events.record(request)),
    eraseSession: (scope, sessionId) => eraseSession(config, scope, sessionId),
    eraseScope: (scope) => eraseScope(config, scope),
    releaseExpired: (scope) => releaseExpired(config, scope === undefined ? {} : { scope }),
    releaseExpiredEvents: (request) => releaseExpiredEvents(config, request),
    fenceScope: async (request) =>
      stores.admissions.fenceScope({ ...fenceRequest(request), now: clock.now() }),
    liftScopeFence: (target) => stores.admissions.liftScopeFence(target),
    scopeFences: (target) => stores.admissions.scopeFences(target),
    listUnresolved: (scope, opts) => listUnresolved(config, scope, opts),
    reconcileExpired: async (scope) =>
      (await stores.journal.reconcileExpired({ now: clock.now(), ...(scope ? { scope } : {}) }))
        .length,
  };
  return Object.freeze(runner);
}

/** `fenceScope`'s request as plain data (the store validates the target and the reason). */
function fenceRequest(request: unknown): {
  readonly target: ScopeFenceTarget;
  readonly reason: ScopeFenceReason;
} {
  const r = closedRecord("fenceScope", request, ["target", "reason"]);
  return { target: r.target as ScopeFenceTarget, reason: r.reason as ScopeFenceReason };
}

const ENGINE_OPTIONS = [
  "clients",
  "policy",
  "tools",
  "providerTools",
  "terminalTools",
  "hooks",
  "permissions",
  "volatile",
  "longContext",
  "media",
  "recall",
  "extraction",
  "releasePreStreamRejections",
  "trailKey",
  "cacheHygiene",
] as const satisfies readonly (keyof EngineOptions)[];

/** The engine's own options out of the runner's configuration (absent ones stay absent). */
function engineOptions(config: ResolvedConfig): EngineOptions {
  const out: Record<string, unknown> = {};
  for (const key of ENGINE_OPTIONS) if (config[key] !== undefined) out[key] = config[key];
  return out as unknown as EngineOptions;
}

/** A turn's writes as one unit of the store set, when it offers units (else as they come). */
function inUnit<T>(config: ResolvedConfig, work: () => Promise<T>): Promise<T> {
  const unit = config.stores.unit;
  return unit ? unit(work) : work();
}

function bindingFor(config: ResolvedConfig, request: NormalizedRequest): string {
  return bindingOf({
    bound: request.bound,
    configRevision: config.configRevision,
    resultContractVersion: config.resultContractVersion,
  });
}

async function existingView(
  config: ResolvedConfig,
  request: NormalizedRequest,
  rootKey: string,
  binding: string,
): Promise<ConversationView | undefined> {
  const record = await config.stores.rootResults.get(request.scope, rootKey, config.clock.now());
  if (!record) return undefined;
  if (record.binding !== binding) throw new ConversationConflictError(rootKey);
  return (await readRoot(config, request.scope, rootKey)) ?? undefined;
}

async function execute(
  config: ResolvedConfig,
  engine: Engine,
  events: EventsApi,
  request: NormalizedRequest,
  signal: AbortSignal | undefined,
  outputs?: StepOutputs,
): Promise<ConversationView> {
  const { clock } = config;
  const rootKey = conversationRootKey(request.scope, request.sessionId, request.idempotencyKey);
  const binding = bindingFor(config, request);
  const seen = await existingView(config, request, rootKey, binding);
  if (seen) return seen;
  let choice: ModelChoice;
  try {
    choice = normalizeModelChoice(config.policy.resolve({ ...request.intent }));
    if (!config.clients.some((c) => c.id === choice.clientId)) throw new Error("absent client");
  } catch {
    return { status: "not_admitted", reason: "routing_unavailable" };
  }
  if (request.meta?.event)
    await events.assertNewInputEvent(request.scope, request.sessionId, request.meta.event.id);
  // A request cancelled before its admission is never admitted (seed 002): nothing is written.
  if (signal?.aborted) return { status: "not_admitted", reason: "cancelled" };
  const now = clock.now();
  const deadlineAt = now + config.runTimeoutMs;
  const claim = await claimTurn(config, request, rootKey, binding, now, deadlineAt);
  if (claim.status === "answered") return claim.view;
  const a: Admitted = { ...claim.turn, deadlineAt, choice, signal, outputs };
  try {
    return await runAdmitted(config, engine, request, a);
  } catch {
    // Every path after the first durable write ends through uncertainty, even one nobody foresaw.
    return uncertain(config, a, "loop");
  }
}

interface Admitted extends TurnRef {
  readonly deadlineAt: number;
  readonly choice: ModelChoice;
  readonly signal: AbortSignal | undefined;
  readonly outputs: StepOutputs | undefined;
}

async function runAdmitted(
  config: ResolvedConfig,
  engine: Engine,
  request: NormalizedRequest,
  a: Admitted,
): Promise<ConversationView> {
  const { stores } = config;
  let log: readonly Msg[];
  let history: readonly Msg[];
  let revision: number;
  try {
    const view = await stores.sessions.load(request.scope, request.sessionId);
    if (view.erased) return await refuseErased(config, request, a);
    log = view.messages;
    history = renderEvents(log, config.eventLabels);
    revision = view.revision;
  } catch {
    return uncertain(config, a, "session_load");
  }
  const outputs = a.outputs ?? new StepOutputs(config, request, a.rootKey);
  const grant = request.toolProfile ? config.profiles?.[request.toolProfile] : undefined;
  const outcome: TurnOutcome = await engine.runTurn({
    scope: request.scope,
    sessionId: request.sessionId,
    rootKey: a.rootKey,
    turnId: a.rootKey,
    admissionId: a.admissionId,
    history,
    ...(history !== log ? { log } : {}),
    revision,
    input: request.blocks,
    ...(request.meta ? { inputMeta: request.meta } : {}),
    intent: request.intent,
    choice: a.choice,
    ...(request.trigger ? { trigger: request.trigger } : {}),
    ...(grant ? { grant } : {}),
    ...(config.facts ? { facts: config.facts } : {}),
    ...(a.signal ? { signal: a.signal } : {}),
    deadlineAt: a.deadlineAt,
    // The root's deadline and the invocation's timeout are the same instant here: the admission's.
    answerByAt: answerByAt(config.runTimeoutMs, a.deadlineAt),
    sink: outputs.sink,
  });
  if (outcome.status === "not_admitted") return uncertain(config, a, "loop");
  if (outcome.status === "reconciliation_required") return uncertain(config, a, outcome.cause);
  const stored = await outputs.drain();
  if (!stored) return uncertain(config, a, "result_store");
  return complete(config, request, a, outcome.messages, outcome.result);
}

async function complete(
  config: ResolvedConfig,
  request: NormalizedRequest,
  a: Admitted,
  messages: readonly Msg[],
  result: TurnResult,
): Promise<ConversationView> {
  const { stores, clock } = config;
  // A released refusal recorded nothing, the input included: there is no batch to append.
  if (messages.length > 0) {
    try {
      await stores.sessions.append(request.scope, request.sessionId, messages, {
        admissionId: a.admissionId,
        now: clock.now(),
      });
    } catch (error) {
      return uncertain(
        config,
        a,
        error instanceof ScopeFencedError ? "scope_fenced" : "session_append",
      );
    }
  }
  const envelope: FinalEnvelope = { version: config.resultContractVersion, result };
  if (utf8Length(JSON.stringify(envelope)) > config.maxResultChars)
    return uncertain(config, a, "result_store");
  try {
    await stores.rootResults.put(request.scope, a.rootKey, envelope as never, clock.now(), {
      admissionId: a.admissionId,
    });
    const back = await stores.rootResults.get(request.scope, a.rootKey, clock.now());
    if (back?.state !== "stored") return uncertain(config, a, "root_store");
  } catch (error) {
    return uncertain(config, a, error instanceof ScopeFencedError ? "scope_fenced" : "root_store");
  }
  try {
    const finished = await stores.admissions.finish(request.scope, a.admissionId);
    if (finished?.state !== "finished") {
      const current = await stores.admissions.get(request.scope, a.admissionId);
      if (current?.state !== "finished") return uncertain(config, a, "admission_store");
    }
  } catch {
    const current = await stores.admissions
      .get(request.scope, a.admissionId)
      .catch(() => undefined);
    if (current?.state !== "finished") return uncertain(config, a, "admission_store");
  }
  return { status: "completed", rootKey: a.rootKey, replayed: false, result };
}

/** An erased session takes no new turn: the session is freed, then erased again (the reservation and the admission go). */
async function refuseErased(
  config: ResolvedConfig,
  request: NormalizedRequest,
  a: Admitted,
): Promise<ConversationView> {
  const { stores } = config;
  try {
    await stores.admissions.finish(request.scope, a.admissionId);
    await eraseSession(config, request.scope, request.sessionId);
  } catch {
    return uncertain(config, a, "session_load");
  }
  return { status: "unavailable", rootKey: a.rootKey };
}
