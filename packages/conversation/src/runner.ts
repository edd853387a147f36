import { type Msg, normalizeModelChoice, type ModelChoice, type Scope, utf8Length, type UncertainCause } from "@alma-harness/core";
import { GovernedCalls } from "@alma-harness/execution";
import { createEngine, type Engine, type TurnOutcome, type TurnResult } from "@alma-harness/loop";
import { type ConversationConfig, type EngineOptions, EXPIRED_RELEASE_GRACE_MS, type ResolvedConfig, resolveConfig } from "./config.js";
import { ConversationConflictError } from "./errors.js";
import { type EventsApi, eventsApi, type RecordEventsRequest, type RecordEventsResult } from "./events.js";
import { type NormalizedRequest, normalizeRequest, type RunTurnRequest } from "./input.js";
import { bindingOf, conversationRootKey } from "./keys.js";
import { renderEvents } from "./render.js";
import { StepOutputs } from "./step-outputs.js";
import { type ConversationStream, streamConversation } from "./stream.js";
import type { ConversationView, FinalEnvelope } from "./views.js";

export interface ConversationRunner {
  runTurn(request: RunTurnRequest): Promise<ConversationView>;
  streamTurn(request: RunTurnRequest): ConversationStream;
  read(scope: Scope, rootKey: string): Promise<ConversationView | null>;
  recordEvents(request: RecordEventsRequest): Promise<RecordEventsResult>;
  eraseSession(scope: Scope, sessionId: string): Promise<void>;
  /** Frees admissions fifteen minutes past their deadline (turns and event batches). */
  releaseExpired(scope?: Scope): Promise<number>;
  /** Fences expired journal records; never re-sends. */
  reconcileExpired(scope?: Scope): Promise<number>;
}

/** Builds the one entrypoint hosts use. Bad configuration throws here, synchronously. */
export function createConversationRunner(input: ConversationConfig): ConversationRunner {
  const config = resolveConfig(input);
  const { stores, clock } = config;
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
  });
  // The engine's options go to the engine as they came, compiled once there; the runner adds its own seams.
  const engine = createEngine({
    ...engineOptions(config),
    system: config.prompt,
    limits: { ...config.limits, maxCalls: config.maxCalls },
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
        (outputs) => inUnit(config, () => execute(config, engine, events, normalized, normalized.signal, outputs)),
        (scope, key) => read(config, scope, key),
      );
    },
    read: (scope, rootKey) => read(config, scope, rootKey),
    recordEvents: (request) => inUnit(config, () => events.record(request)),
    eraseSession: async (scope, sessionId) => {
      await stores.sessions.erase(scope, sessionId);
      await stores.results.eraseSession(scope, sessionId);
      await stores.rootResults.eraseSession(scope, sessionId);
      await stores.labels.erase(scope, sessionId);
    },
    releaseExpired: async (scope) =>
      (await stores.admissions.releaseExpired({ ...(scope ? { scope } : {}), now: clock.now(), graceMs: EXPIRED_RELEASE_GRACE_MS })).length,
    reconcileExpired: async (scope) => (await stores.journal.reconcileExpired({ now: clock.now(), ...(scope ? { scope } : {}) })).length,
  };
  return Object.freeze(runner);
}

const ENGINE_OPTIONS = ["clients", "policy", "tools", "providerTools", "terminalTools", "hooks", "permissions", "volatile", "longContext", "media", "releasePreStreamRejections"] as const satisfies readonly (keyof EngineOptions)[];

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
  return bindingOf({ bound: request.bound, configRevision: config.configRevision, resultContractVersion: config.resultContractVersion });
}

/** Reads a root without dispatching or loading context. */
async function read(config: ResolvedConfig, scope: Scope, rootKey: string): Promise<ConversationView | null> {
  const { stores, clock } = config;
  const record = await stores.rootResults.get(scope, rootKey, clock.now());
  if (!record) return null;
  if (record.state === "erased" || record.state === "expired") return { status: "unavailable", rootKey };
  if (record.state === "stored") {
    const envelope = record.envelope as unknown as FinalEnvelope;
    return { status: "completed", rootKey, replayed: true, result: envelope.result };
  }
  const holder = await stores.admissions.holder(scope, record.sessionId);
  if (holder && holder.rootKey === rootKey && holder.state === "active") return { status: "in_progress", rootKey };
  return { status: "reconciliation_required", rootKey };
}

async function existingView(config: ResolvedConfig, request: NormalizedRequest, rootKey: string, binding: string): Promise<ConversationView | undefined> {
  const record = await config.stores.rootResults.get(request.scope, rootKey, config.clock.now());
  if (!record) return undefined;
  if (record.binding !== binding) throw new ConversationConflictError(rootKey);
  return (await read(config, request.scope, rootKey)) ?? undefined;
}

async function execute(
  config: ResolvedConfig,
  engine: Engine,
  events: EventsApi,
  request: NormalizedRequest,
  signal: AbortSignal | undefined,
  outputs?: StepOutputs,
): Promise<ConversationView> {
  const { stores, clock } = config;
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
  if (request.meta?.event) await events.assertNewInputEvent(request.scope, request.sessionId, request.meta.event.id);
  const now = clock.now();
  const deadlineAt = now + config.runTimeoutMs;
  const admitted = await stores.admissions.admit({
    scope: request.scope,
    sessionId: request.sessionId,
    rootKey,
    kind: "turn",
    admissionId: config.ids.next("adm"),
    now,
    deadlineAt,
  });
  if (admitted.status === "busy") {
    if (admitted.holder.rootKey === rootKey) return { status: "in_progress", rootKey };
    return { status: "busy", rootKey, holder: admitted.holder.rootKey };
  }
  const admissionId = admitted.admission.admissionId;
  const reserved = await stores.rootResults.reserve({
    scope: request.scope,
    resultId: rootKey,
    sessionId: request.sessionId,
    binding,
    sensitivity: request.intent.sensitivity,
    maxChars: config.maxResultChars,
    expiresAt: now + config.resultRetentionMs,
    createdAt: now,
  });
  if (reserved.status === "exists") {
    await stores.admissions.finish(request.scope, admissionId);
    if (reserved.record.binding !== binding) throw new ConversationConflictError(rootKey);
    return (await read(config, request.scope, rootKey)) ?? { status: "reconciliation_required", rootKey };
  }
  return await runAdmitted(config, engine, request, { rootKey, admissionId, deadlineAt, choice, signal, outputs });
}

interface Admitted {
  readonly rootKey: string;
  readonly admissionId: string;
  readonly deadlineAt: number;
  readonly choice: ModelChoice;
  readonly signal: AbortSignal | undefined;
  readonly outputs: StepOutputs | undefined;
}

async function runAdmitted(config: ResolvedConfig, engine: Engine, request: NormalizedRequest, a: Admitted): Promise<ConversationView> {
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
    return uncertain(config, request, a, "session_load");
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
    sink: outputs.sink,
  });
  if (outcome.status === "not_admitted") return uncertain(config, request, a, "loop");
  if (outcome.status === "reconciliation_required") return uncertain(config, request, a, outcome.cause);
  const stored = await outputs.drain();
  if (!stored) return uncertain(config, request, a, "result_store");
  return complete(config, request, a, outcome.messages, outcome.result);
}

async function complete(config: ResolvedConfig, request: NormalizedRequest, a: Admitted, messages: readonly Msg[], result: TurnResult): Promise<ConversationView> {
  const { stores, clock } = config;
  // A released refusal recorded nothing, the input included: there is no batch to append.
  if (messages.length > 0) {
    try {
      await stores.sessions.append(request.scope, request.sessionId, messages, { admissionId: a.admissionId, now: clock.now() });
    } catch {
      return uncertain(config, request, a, "session_append");
    }
  }
  const envelope: FinalEnvelope = { version: config.resultContractVersion, result };
  if (utf8Length(JSON.stringify(envelope)) > config.maxResultChars) return uncertain(config, request, a, "result_store");
  try {
    await stores.rootResults.put(request.scope, a.rootKey, envelope as never, clock.now(), { admissionId: a.admissionId });
    const back = await stores.rootResults.get(request.scope, a.rootKey, clock.now());
    if (back?.state !== "stored") return uncertain(config, request, a, "root_store");
  } catch {
    return uncertain(config, request, a, "root_store");
  }
  try {
    const finished = await stores.admissions.finish(request.scope, a.admissionId);
    if (finished?.state !== "finished") {
      const current = await stores.admissions.get(request.scope, a.admissionId);
      if (current?.state !== "finished") return uncertain(config, request, a, "admission_store");
    }
  } catch {
    const current = await stores.admissions.get(request.scope, a.admissionId).catch(() => undefined);
    if (current?.state !== "finished") return uncertain(config, request, a, "admission_store");
  }
  return { status: "completed", rootKey: a.rootKey, replayed: false, result };
}

/** An erased session takes no new turn: the reservation is tombstoned with it and the session freed. */
async function refuseErased(config: ResolvedConfig, request: NormalizedRequest, a: Admitted): Promise<ConversationView> {
  const { stores } = config;
  try {
    await stores.rootResults.eraseSession(request.scope, request.sessionId);
    await stores.admissions.finish(request.scope, a.admissionId);
  } catch {
    return uncertain(config, request, a, "session_load");
  }
  return { status: "unavailable", rootKey: a.rootKey };
}

/** Marks the admission uncertain, reads whether the turn persisted, releases the session, tells the host once. */
async function uncertain(config: ResolvedConfig, request: NormalizedRequest, a: Admitted, cause: UncertainCause): Promise<ConversationView> {
  const { stores } = config;
  await stores.admissions.markUncertain(request.scope, a.admissionId).catch(() => undefined);
  let persisted: boolean | null;
  try {
    const view = await stores.sessions.load(request.scope, request.sessionId);
    persisted = view.messages.some((m) => m.meta?.turn === a.rootKey);
  } catch {
    persisted = null;
  }
  let released = false;
  try {
    const after = await stores.admissions.releaseFailed(request.scope, a.admissionId);
    released = after?.state === "released" || after?.state === "finished";
  } catch {
    released = false;
  }
  try {
    config.onUncertainTurn?.({ scope: request.scope, sessionId: request.sessionId, rootKey: a.rootKey, cause, persisted, released });
  } catch {
    // the observer is not behavior; its throw is swallowed
  }
  return { status: "reconciliation_required", rootKey: a.rootKey };
}
