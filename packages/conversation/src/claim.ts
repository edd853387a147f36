import type { AdmitResult, ResultRecord, ReserveResult } from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";
import { ConversationConflictError } from "./errors.js";
import type { NormalizedRequest } from "./request.js";
import { readRoot } from "./read.js";
import { freeAdmission, type TurnRef, uncertain } from "./uncertain.js";
import type { ConversationView } from "./views.js";

/** What claiming a turn came to: the session and the root are this invocation's, or a view to answer. */
export type Claim =
  | { readonly status: "claimed"; readonly turn: TurnRef }
  | { readonly status: "answered"; readonly view: ConversationView };

/**
 * Admits the session and reserves the root's final-result slot: the turn's first durable writes.
 * A write that throws (before its effect, or after it with the acknowledgement lost) is read back:
 * when nothing of the turn is durable any more (no admission, or one this call released) the
 * store's error is rethrown and the same key may be retried; otherwise the turn is marked, released
 * and reported `reconciliation_required` (cause `admit` or `root_reserve`). No path leaves the
 * session held without an `onUncertainTurn` report.
 */
export async function claimTurn(
  config: ResolvedConfig,
  request: NormalizedRequest,
  rootKey: string,
  binding: string,
  now: number,
  deadlineAt: number,
): Promise<Claim> {
  const { stores } = config;
  const turn: TurnRef = {
    scope: request.scope,
    sessionId: request.sessionId,
    rootKey,
    admissionId: config.ids.next("adm"),
  };
  let admitted: AdmitResult;
  try {
    admitted = await stores.admissions.admit({
      scope: turn.scope,
      sessionId: turn.sessionId,
      rootKey,
      kind: "turn",
      admissionId: turn.admissionId,
      now,
      deadlineAt,
    });
  } catch (error) {
    return { status: "answered", view: await afterFailedAdmit(config, turn, error) };
  }
  if (admitted.status === "busy") {
    if (admitted.holder.rootKey === rootKey)
      return { status: "answered", view: { status: "in_progress", rootKey } };
    return {
      status: "answered",
      view: { status: "busy", rootKey, holder: admitted.holder.rootKey },
    };
  }
  let reserved: ReserveResult;
  try {
    reserved = await stores.rootResults.reserve({
      scope: turn.scope,
      resultId: rootKey,
      sessionId: turn.sessionId,
      binding,
      sensitivity: request.intent.sensitivity,
      maxChars: config.maxResultChars,
      expiresAt: now + config.resultRetentionMs,
      createdAt: now,
    });
  } catch (error) {
    return { status: "answered", view: await afterFailedReserve(config, turn, binding, error) };
  }
  if (reserved.status === "exists")
    return {
      status: "answered",
      view: await answerExisting(config, turn, binding, reserved.record),
    };
  return { status: "claimed", turn };
}

/**
 * An admit that threw: nothing of the turn is durable but, perhaps, its admission. Releasing it by
 * its id is safe whether or not it landed (an absent admission holds nothing), so a confirmed
 * release rethrows the error; an unconfirmed one is uncertain.
 */
async function afterFailedAdmit(
  config: ResolvedConfig,
  turn: TurnRef,
  error: unknown,
): Promise<ConversationView> {
  if (await freeAdmission(config, turn.scope, turn.admissionId)) throw error;
  return uncertain(config, turn, "admit");
}

/**
 * A reserve that threw. Absent: nothing was reserved; the session is freed and the error rethrown.
 * Reserved under this binding: it may be this call's reservation (acknowledgement lost) or an
 * earlier delivery's that never settled; either way the root can never be answered, so the turn is
 * uncertain. Any other record answers as a found root does.
 */
async function afterFailedReserve(
  config: ResolvedConfig,
  turn: TurnRef,
  binding: string,
  error: unknown,
): Promise<ConversationView> {
  let record: ResultRecord | undefined;
  try {
    record = await config.stores.rootResults.get(turn.scope, turn.rootKey, config.clock.now());
  } catch {
    return uncertain(config, turn, "root_reserve");
  }
  if (record === undefined) {
    if (await freeAdmission(config, turn.scope, turn.admissionId)) throw error;
    return uncertain(config, turn, "root_reserve");
  }
  if (record.state === "reserved" && record.binding === binding)
    return uncertain(config, turn, "root_reserve");
  return answerExisting(config, turn, binding, record);
}

/** The root was reserved before this delivery's admission: free the session, then answer what the root says. */
async function answerExisting(
  config: ResolvedConfig,
  turn: TurnRef,
  binding: string,
  record: ResultRecord,
): Promise<ConversationView> {
  if (!(await freeAdmission(config, turn.scope, turn.admissionId)))
    return uncertain(config, turn, "admission_store");
  if (record.binding !== binding) throw new ConversationConflictError(turn.rootKey);
  return (
    (await readRoot(config, turn.scope, turn.rootKey)) ?? {
      status: "reconciliation_required",
      rootKey: turn.rootKey,
    }
  );
}
