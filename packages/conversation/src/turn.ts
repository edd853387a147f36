import { type Msg, type ModelChoice, normalizeModelChoice } from "@alma-harness/core";
import type { Engine, TurnOutcome } from "@alma-harness/loop";
import { claimTurn } from "./claim.js";
import type { ResolvedConfig } from "./config.js";
import { ConversationConflictError } from "./errors.js";
import { loadContent } from "./load.js";
import { readRoot } from "./read.js";
import { Checkpoints } from "./checkpoints.js";
import { parkingOf } from "./parking.js";
import { resumeParked } from "./resume.js";
import { renderEvents } from "./render.js";
import type { NormalizedRequest } from "./request.js";
import { StepOutputs } from "./step-outputs.js";
import { uncertain } from "./uncertain.js";
import type { ConversationView } from "./views.js";

import { type Admitted, engineInput, refuseErased, settleRun, type TurnDeps } from "./settle.js";

export type { Admitted, TurnDeps } from "./settle.js";

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
  // The original key of a parked turn goes on with it once it is ready (its asks decided or expired).
  if (seen?.status === "awaiting_approval")
    return resumeParked(deps, request.scope, rootKey, {
      ...(signal ? { signal } : {}),
      ...(outputs ? { outputs } : {}),
    });
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
  const parked = parkingOf(config);
  const a: Admitted = {
    ...claim.turn,
    deadlineAt,
    choice,
    signal,
    outputs,
    ...(parked ? { checkpoints: new Checkpoints(config, parked, request, claim.turn) } : {}),
  };
  try {
    return await runAdmitted(config, deps.engine, request, a);
  } catch {
    // Every path after the first durable write ends through uncertainty, even one nobody foresaw.
    return uncertain(config, a, "loop");
  }
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
  const outcome: TurnOutcome = await engine.runTurn({
    ...engineInput(config, request, a, { log, history, revision }, outputs),
    input: content.blocks,
    ...(content.meta ? { inputMeta: content.meta } : {}),
  });
  return settleRun(config, request, a, outcome, outputs);
}
