import {
  type Msg,
  type ModelChoice,
  type Scope,
  ScopeFencedError,
  utf8Length,
} from "@alma-harness/core";
import type { Engine, TurnInput, TurnOutcome, TurnResult } from "@alma-harness/loop";
import { type Checkpoints, parkedRequestOf } from "./checkpoints.js";
import { answerByAt, type ResolvedConfig } from "./config.js";
import { eraseSession } from "./erasure.js";
import type { EventsApi } from "./events.js";
import { type ParkedRequest, parkingOf, parkTurn } from "./parking.js";
import type { StepOutputs } from "./step-outputs.js";
import { type TurnRef, uncertain } from "./uncertain.js";
import type { ConversationView, FinalEnvelope } from "./views.js";

/** What a turn runs with: the configuration, the engine, the events API. */
export interface TurnDeps {
  readonly config: ResolvedConfig;
  readonly engine: Engine;
  readonly events: EventsApi;
}

/** A run of a turn as it holds the session: its admission, deadline, route, signal and outputs. */
export interface Admitted extends TurnRef {
  readonly deadlineAt: number;
  readonly choice: ModelChoice;
  readonly signal: AbortSignal | undefined;
  readonly outputs: StepOutputs | undefined;
  /** A resume's run (it claimed a parked turn), not the first. */
  readonly resumed?: boolean;
  /** Where the run's step boundaries go (a runner that parks its asks keeps them durable). */
  readonly checkpoints?: Checkpoints;
}

/** The session as a run reads it: the log, its rendered history, its revision. */
export interface SessionRead {
  readonly log: readonly Msg[];
  readonly history: readonly Msg[];
  readonly revision: number;
}

/** What a run of a turn is about: its session and the request's bounds (the parked request's too). */
export interface RunSubject extends ParkedRequest {
  readonly scope: Scope;
  readonly sessionId: string;
}

/** The engine's input for one run of the turn, but its content (the first run's, or a resume's). */
export function engineInput(
  config: ResolvedConfig,
  s: RunSubject,
  a: Admitted,
  session: SessionRead,
  outputs: StepOutputs,
): Omit<TurnInput, "input" | "inputMeta"> {
  const grant = s.toolProfile ? config.profiles?.[s.toolProfile] : undefined;
  return {
    scope: s.scope,
    sessionId: s.sessionId,
    rootKey: a.rootKey,
    turnId: a.rootKey,
    admissionId: a.admissionId,
    history: session.history,
    ...(session.history !== session.log ? { log: session.log } : {}),
    revision: session.revision,
    intent: s.intent,
    choice: a.choice,
    ...(s.trigger ? { trigger: s.trigger } : {}),
    ...(grant ? { grant } : {}),
    ...(s.maxCalls < config.maxCalls ? { maxCalls: s.maxCalls } : {}),
    ...(config.facts ? { facts: config.facts } : {}),
    ...(a.signal ? { signal: a.signal } : {}),
    deadlineAt: a.deadlineAt,
    // The root's deadline and the invocation's timeout are the same instant here: the admission's.
    answerByAt: answerByAt(config.runTimeoutMs, a.deadlineAt),
    sink: outputs.sink,
    ...(a.checkpoints ? { continuations: a.checkpoints } : {}),
  };
}

/**
 * A run's outcome as the host's view: uncertain endings through `uncertain`; a park stored
 * (`awaiting_approval`); a completion appended, stored and released. The turn's parked or
 * checkpointed record goes once the run ends other than by parking again.
 */
export async function settleRun(
  config: ResolvedConfig,
  s: RunSubject,
  a: Admitted,
  outcome: TurnOutcome,
  outputs: StepOutputs,
): Promise<ConversationView> {
  const parked = parkingOf(config);
  const kept = parked !== undefined && (a.resumed === true || a.checkpoints?.wrote === true);
  const done = () => parked?.done(s.scope, a.rootKey, a.admissionId).catch(() => false);
  // A completed turn's record goes in its final transaction (with grouped commits): before the end.
  if (kept && outcome.status === "completed") await done();
  const view = await settled(config, s, a, outcome, outputs);
  if (kept && outcome.status !== "completed" && view.status !== "awaiting_approval") await done();
  return view;
}

async function settled(
  config: ResolvedConfig,
  s: RunSubject,
  a: Admitted,
  outcome: TurnOutcome,
  outputs: StepOutputs,
): Promise<ConversationView> {
  if (outcome.status === "not_admitted") return uncertain(config, a, "loop");
  if (outcome.status === "reconciliation_required") return uncertain(config, a, outcome.cause);
  const stored = await outputs.drain();
  if (!stored) return uncertain(config, a, "result_store");
  if (outcome.status === "awaiting_approval") {
    const parked = parkingOf(config);
    // An engine that parks without a parking store is a broken invariant: the turn is uncertain.
    if (!parked) return uncertain(config, a, "loop");
    return parkTurn(config, parked, a, parkedRequestOf(s), outcome, a.checkpoints);
  }
  return complete(config, s, a, outcome.messages, outcome.result);
}

async function complete(
  config: ResolvedConfig,
  request: RunSubject,
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
export async function refuseErased(
  config: ResolvedConfig,
  request: RunSubject,
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
