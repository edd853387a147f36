import {
  type Msg,
  type ModelChoice,
  normalizeModelChoice,
  ScopeFencedError,
  utf8Length,
} from "@alma-harness/core";
import type { Engine, TurnOutcome, TurnResult } from "@alma-harness/loop";
import { claimTurn } from "./claim.js";
import { answerByAt, type ResolvedConfig } from "./config.js";
import { eraseSession } from "./erasure.js";
import { ConversationConflictError } from "./errors.js";
import type { EventsApi } from "./events.js";
import { loadContent } from "./load.js";
import { readRoot } from "./read.js";
import { renderEvents } from "./render.js";
import type { NormalizedRequest } from "./request.js";
import { StepOutputs } from "./step-outputs.js";
import { type TurnRef, uncertain } from "./uncertain.js";
import type { ConversationView, FinalEnvelope } from "./views.js";

/** A root already stored answers (replay, `in_progress`, ...) or conflicts, before anything else runs. */
async function existingView(
  config: ResolvedConfig,
  request: NormalizedRequest,
): Promise<ConversationView | undefined> {
  const { rootKey } = request;
  const record = await config.stores.rootResults.get(request.scope, rootKey, config.clock.now());
  if (!record) return undefined;
  if (record.binding !== request.binding) throw new ConversationConflictError(rootKey);
  return (await readRoot(config, request.scope, rootKey)) ?? undefined;
}

/** What a turn runs with: the configuration, the engine, the events API. */
export interface TurnDeps {
  readonly config: ResolvedConfig;
  readonly engine: Engine;
  readonly events: EventsApi;
}

/**
 * One turn, either form: a stored root answers; routing; admission, the root claim and the
 * pending final-result reservation; only then the content (`loadInput`), the session and the engine.
 */
export async function execute(
  deps: TurnDeps,
  request: NormalizedRequest,
  outputs?: StepOutputs,
): Promise<ConversationView> {
  const { config, events } = deps;
  const { clock } = config;
  const { rootKey, binding, signal } = request;
  const seen = await existingView(config, request);
  if (seen) return seen;
  let choice: ModelChoice;
  try {
    choice = normalizeModelChoice(config.policy.resolve({ ...request.intent }));
    if (!config.clients.some((c) => c.id === choice.clientId)) throw new Error("absent client");
  } catch {
    return { status: "not_admitted", reason: "routing_unavailable" };
  }
  const { content } = request;
  if (content.type === "inline" && content.meta?.event)
    await events.assertNewInputEvent(request.scope, request.sessionId, content.meta.event.id);
  // A request cancelled before its admission is never admitted (seed 002): nothing is written.
  if (signal?.aborted) return { status: "not_admitted", reason: "cancelled" };
  const now = clock.now();
  // A root's proposed deadline already past: nothing is admitted (a stored root replayed above).
  if (request.deadlineAt <= now) return { status: "not_admitted", reason: "deadline" };
  const deadlineAt = Math.min(request.deadlineAt, now + config.runTimeoutMs);
  const claim = await claimTurn(config, request, rootKey, binding, now, deadlineAt);
  if (claim.status === "answered") return claim.view;
  const a: Admitted = { ...claim.turn, deadlineAt, choice, signal, outputs };
  try {
    return await runAdmitted(config, deps.engine, request, a);
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
  // Seed 002: admission, root claim and pending final-result reservation precede loadInput.
  const content = await loadContent(config, request, a.deadlineAt);
  if (!content.ok) return uncertain(config, a, content.cause);
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
    input: content.blocks,
    ...(content.meta ? { inputMeta: content.meta } : {}),
    intent: request.intent,
    choice: a.choice,
    ...(request.trigger ? { trigger: request.trigger } : {}),
    ...(grant ? { grant } : {}),
    ...(request.maxCalls < config.maxCalls ? { maxCalls: request.maxCalls } : {}),
    ...(config.facts ? { facts: config.facts } : {}),
    ...(a.signal ? { signal: a.signal } : {}),
    deadlineAt: a.deadlineAt,
    // The root's deadline and the invocation's timeout are the same instant here: the admission's.
    answerByAt: answerByAt(config.runTimeoutMs, a.deadlineAt),
    sink: outputs.sink,
  });
  if (outcome.status === "not_admitted") return uncertain(config, a, "loop");
  if (outcome.status === "reconciliation_required") return uncertain(config, a, outcome.cause);
  // The runner's engines never park yet (`asks` stays "wait"): a park here is a broken invariant.
  if (outcome.status === "awaiting_approval") return uncertain(config, a, "loop");
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
