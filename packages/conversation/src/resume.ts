import {
  type Block,
  type ParkedTurn,
  type ParkedTurnStore,
  AlmaError,
  type Scope,
  ScopeFencedError,
} from "@alma-harness/core";
import { parkReady } from "@alma-harness/core/stores";
import {
  type AskDecision,
  type Continuation,
  readContinuation,
  type TurnOutcome,
} from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import { Checkpoints } from "./checkpoints.js";
import { renderEvents } from "./render.js";
import { awaitingView, type ParkedRequest, parkingOf, readParkedRecord } from "./parking.js";
import { readRoot } from "./read.js";
import { StepOutputs } from "./step-outputs.js";
import {
  type Admitted,
  engineInput,
  type RunSubject,
  refuseErased,
  type SessionRead,
  settleRun,
  type TurnDeps,
} from "./settle.js";
import { uncertain } from "./uncertain.js";
import type { ConversationView } from "./views.js";

/** What the kernel answers for an ask nobody decided before its expiry (never a person's). */
const EXPIRED: AskDecision = Object.freeze({ allowed: false, by: "kernel", reason: "ask_expired" });

/** Whether a turn can go on now: a park that is ready (core's rule), or a run the claim may take over. */
function ready(turn: ParkedTurn, now: number): boolean {
  return turn.state === "resuming" || parkReady(turn, now);
}

/**
 * Goes on with a parked turn in this process, when it can: claims it under a fresh admission
 * (exactly one claimant wins; the others read the root as it is), then runs the decided calls and
 * the rest of the turn (`engine.resumeTurn`). A turn whose run died (a first run at its last
 * checkpoint, or a resume) is claimed again after its run's deadline: it goes on only when every
 * call that may have started is a replay-safe tool's, else it ends `reconciliation_required`
 * (cause `tool:<name>`) and no handler runs twice.
 */
export async function resumeParked(
  deps: TurnDeps,
  scope: Scope,
  rootKey: string,
  opts: { readonly signal?: AbortSignal; readonly outputs?: StepOutputs } = {},
): Promise<ConversationView> {
  const { config } = deps;
  const parked = parkingOf(config);
  const now = config.clock.now();
  const turn = parked ? await parked.get(scope, rootKey) : undefined;
  if (!parked || !turn || !ready(turn, now)) return answer(config, scope, rootKey, turn);
  const admissionId = config.ids.next("adm");
  const deadlineAt = now + config.runTimeoutMs;
  const claim = await claimOnce(parked, turn, { scope, rootKey, admissionId, now, deadlineAt });
  if (!claim) return answer(config, scope, rootKey);
  const ref = { scope, sessionId: claim.turn.sessionId, rootKey, admissionId };
  const read = readClaimed(claim.turn);
  if (!read) {
    // A record this runtime cannot read (or whose outputs do not match it): nothing runs, and the
    // record stays for whoever reconciles the turn.
    return uncertain(config, ref, "continuation");
  }
  const { request, loop } = read;
  const subject: RunSubject = { ...request, scope, sessionId: claim.turn.sessionId };
  const a: Admitted = {
    ...ref,
    deadlineAt,
    choice: loop.choice,
    signal: opts.signal,
    outputs: opts.outputs,
    resumed: true,
    checkpoints: new Checkpoints(
      config,
      parked,
      subject,
      ref,
      claim.turn.outputs.map((o) => o.digest),
    ),
  };
  if (claim.from === "resuming") {
    const unsafe = unsafeReplays(config, claim.turn, loop);
    if (unsafe) {
      await parked.done(scope, rootKey, admissionId).catch(() => false);
      return uncertain(config, a, `tool:${unsafe}`);
    }
  }
  const run = () => runResume(deps, subject, a, claim.turn, loop);
  const around = config.aroundResume;
  if (!around) return run();
  let view: ConversationView | undefined;
  await around({ scope, sessionId: a.sessionId, rootKey }, async () => {
    view = await run();
    return view;
  });
  // A wrapper that never ran the resume broke its contract: the turn stays claimed until its deadline.
  return view ?? { status: "in_progress", rootKey };
}

/** The claimed turn's record read whole: the runner's request and the loop's record (none: unreadable). */
function readClaimed(
  turn: ParkedTurn,
): { readonly request: ParkedRequest; readonly loop: Continuation } | undefined {
  try {
    const record = readParkedRecord(turn.continuation);
    return { request: record.request, loop: readContinuation(record.loop, turn.outputs) };
  } catch {
    return undefined;
  }
}

async function runResume(
  deps: TurnDeps,
  subject: RunSubject,
  a: Admitted,
  turn: ParkedTurn,
  loop: Continuation,
): Promise<ConversationView> {
  const { config, engine } = deps;
  let session: SessionRead;
  try {
    const view = await config.stores.sessions.load(subject.scope, subject.sessionId);
    if (view.erased) return await refuseErased(config, subject, a);
    const history = renderEvents(view.messages, config.eventLabels);
    session = { log: view.messages, history, revision: view.revision };
  } catch {
    return uncertain(config, a, "session_load");
  }
  const outputs = a.outputs ?? new StepOutputs(config, subject, a.rootKey);
  const decisions: Record<string, AskDecision> = {};
  for (const ask of turn.asks) decisions[ask.askId] = decisionOf(ask.decision);
  let outcome: TurnOutcome;
  try {
    outcome = await engine.resumeTurn(
      {
        ...engineInput(config, subject, a, session, outputs),
        input: firstInput(loop),
      },
      loop,
      decisions,
    );
  } catch {
    // The stored continuation no longer fits (another runtime's record, a moved session): nothing ran.
    return uncertain(config, a, "continuation");
  }
  return settleRun(config, subject, a, outcome, outputs);
}

function decisionOf(recorded: ParkedTurn["asks"][number]["decision"]): AskDecision {
  if (!recorded) return EXPIRED;
  return Object.freeze({
    allowed: recorded.allowed,
    by: recorded.by,
    ...(recorded.reason !== undefined ? { reason: recorded.reason } : {}),
  });
}

/** The turn's input blocks, as the loop recorded them (its first user message). */
function firstInput(loop: Continuation): readonly Block[] {
  const first = loop.messages.find((m) => m.message.role === "user");
  return first?.message.blocks ?? [{ type: "text", text: "" }];
}

/**
 * The first call a dead run may have started whose tool is not replay-safe, by registered tool
 * name (none: the run may go again). At a `call_model` boundary no handler was running (the
 * journal guards the model call itself); at a step's tools, every call not `done` may have started,
 * but an asked one only when its decision allowed it. A name the model invented ran nothing.
 */
function unsafeReplays(
  config: ResolvedConfig,
  turn: ParkedTurn,
  loop: Continuation,
): string | undefined {
  if (loop.next.kind !== "run_tools") return undefined;
  const tools = new Map((config.tools ?? []).map((t) => [t.name, t]));
  for (const call of loop.next.calls) {
    if (call.state === "done") continue;
    if (call.state === "asked") {
      const decision = turn.asks.find((x) => x.askId === call.ask.askId)?.decision;
      if (!decision?.allowed) continue;
    }
    const tool = tools.get(call.name);
    // A pure tool has no effect to repeat: it runs again like a replay-safe one.
    if (tool && tool.replaySafe !== true && tool.pure !== true) return tool.name;
  }
  return undefined;
}

/**
 * This call's claim of the turn, or none. A claim that throws is read back: the turn resuming under
 * this call's admission means it landed and only its answer was lost, so the run is this call's;
 * anything else answers through the root's read (a fenced scope rethrows, typed).
 */
async function claimOnce(
  parked: ParkedTurnStore,
  before: ParkedTurn,
  input: Parameters<ParkedTurnStore["claim"]>[0],
): Promise<{ readonly turn: ParkedTurn; readonly from: ParkedTurn["state"] } | undefined> {
  try {
    const claim = await parked.claim(input);
    return claim.status === "claimed" ? { turn: claim.turn, from: claim.from } : undefined;
  } catch (error) {
    if (error instanceof ScopeFencedError) throw error;
    // A refusal is an answer: only an unanswered claim (the store failing) is read back.
    if (error instanceof AlmaError) return undefined;
    const now = await parked.get(input.scope, input.rootKey).catch(() => undefined);
    const ours = now?.state === "resuming" && now.admissionId === input.admissionId;
    return ours ? { turn: now, from: before.state } : undefined;
  }
}

/** The root as it reads now: a parked turn that cannot go on yet answers `awaiting_approval`. */
async function answer(
  config: ResolvedConfig,
  scope: Scope,
  rootKey: string,
  turn?: ParkedTurn,
): Promise<ConversationView> {
  if (turn?.state === "parked") return awaitingView(turn);
  return (await readRoot(config, scope, rootKey)) ?? { status: "reconciliation_required", rootKey };
}

/**
 * The maintenance tick's part: every parked turn due now (its asks expired, or its resumed run
 * dead) goes on, one at a time, oldest expiry first; returns the views they came to.
 */
export async function resumeDue(
  deps: TurnDeps,
  scope?: Scope,
): Promise<readonly ConversationView[]> {
  const parked = parkingOf(deps.config);
  if (!parked) return [];
  const due = await parked.due({ now: deps.config.clock.now(), ...(scope ? { scope } : {}) });
  const views: ConversationView[] = [];
  for (const turn of due) views.push(await resumeParked(deps, turn.scope, turn.rootKey));
  return views;
}
