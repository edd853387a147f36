import type { ResultRecord, Scope } from "@alma-harness/core";
import type { ResolvedConfig } from "./config.js";
import { awaitingView, parkedOf } from "./parking.js";
import type { ConversationView, FinalEnvelope } from "./views.js";

/** The view a root's record settles, or undefined while it is only reserved. */
function settledView(record: ResultRecord, rootKey: string): ConversationView | undefined {
  if (record.state === "erased" || record.state === "expired")
    return { status: "unavailable", rootKey };
  if (record.state === "stored") {
    const envelope = record.envelope as unknown as FinalEnvelope;
    return { status: "completed", rootKey, replayed: true, result: envelope.result };
  }
  return undefined;
}

/**
 * Reads a root without dispatching or loading context. A reserved root is `in_progress` while its
 * turn holds the session; without an active holder the result is read once more, because the turn
 * may have stored it and finished between the two reads: only a root still unsettled after that
 * second read is `reconciliation_required`.
 */
export async function readRoot(
  config: ResolvedConfig,
  scope: Scope,
  rootKey: string,
): Promise<ConversationView | null> {
  const { stores, clock } = config;
  const record = await stores.rootResults.get(scope, rootKey, clock.now());
  if (!record) return null;
  const settled = settledView(record, rootKey);
  if (settled) return settled;
  const holder = await stores.admissions.holder(scope, record.sessionId);
  if (holder && holder.rootKey === rootKey && holder.state === "active") {
    const parked = await parkedOf(config, scope, rootKey);
    return parked?.state === "parked" ? awaitingView(parked) : { status: "in_progress", rootKey };
  }
  const again = await stores.rootResults.get(scope, rootKey, clock.now());
  return (again && settledView(again, rootKey)) ?? { status: "reconciliation_required", rootKey };
}
