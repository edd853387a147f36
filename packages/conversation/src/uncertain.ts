import type { Scope, UncertainCause } from "@alma-harness/core";
import type { ResolvedConfig, UncertainTurnEvent } from "./config.js";
import type { ConversationView } from "./views.js";

/** The turn an invocation holds (or may hold): its root and the admission id it proposed. */
export interface TurnRef {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly admissionId: string;
}

/** Tells the host about an uncertain turn; the observer is not behavior, so its throw is swallowed. */
export function report(config: ResolvedConfig, event: UncertainTurnEvent): void {
  try {
    config.onUncertainTurn?.(event);
  } catch {
    // the observer is not behavior; its throw is swallowed
  }
}

/** Whether a message of the turn is in the session's log; null when the read failed. */
export async function persistedOf(
  config: ResolvedConfig,
  scope: Scope,
  sessionId: string,
  rootKey: string,
): Promise<boolean | null> {
  try {
    const view = await config.stores.sessions.load(scope, sessionId);
    return view.messages.some((m) => m.meta?.turn === rootKey);
  } catch {
    return null;
  }
}

/**
 * Frees an admission of a turn that did nothing durable beyond it (`releaseFailed`), and says whether
 * the session is confirmed free of it: the release's answer, or a read-back after a lost one. An
 * admission that does not exist holds nothing.
 */
export async function freeAdmission(
  config: ResolvedConfig,
  scope: Scope,
  admissionId: string,
): Promise<boolean> {
  const { admissions } = config.stores;
  try {
    const after = await admissions.releaseFailed(scope, admissionId);
    if (after === undefined || after.state === "released" || after.state === "finished")
      return true;
  } catch {
    // read back below
  }
  try {
    const now = await admissions.get(scope, admissionId);
    return now === undefined || now.state === "released" || now.state === "finished";
  } catch {
    return false;
  }
}

/** Marks the admission uncertain, reads whether the turn persisted, releases the session, tells the host once. */
export async function uncertain(
  config: ResolvedConfig,
  turn: TurnRef,
  cause: UncertainCause,
): Promise<ConversationView> {
  const { stores } = config;
  await stores.admissions.markUncertain(turn.scope, turn.admissionId).catch(() => undefined);
  const persisted = await persistedOf(config, turn.scope, turn.sessionId, turn.rootKey);
  const released = await freeAdmission(config, turn.scope, turn.admissionId);
  report(config, {
    scope: turn.scope,
    sessionId: turn.sessionId,
    rootKey: turn.rootKey,
    cause,
    persisted,
    released,
  });
  return { status: "reconciliation_required", rootKey: turn.rootKey };
}
