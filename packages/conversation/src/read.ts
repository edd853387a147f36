import { type ResultRecord, type Scope, ValidationError } from "@alma-harness/core";
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

/** A stored step output of a root, as a stream reader replays it. */
export interface StoredStep {
  readonly step: number;
  readonly text: string;
}

/**
 * The stored step outputs of a root after step `after`, in step order, each read as the live
 * stream reads it (a fresh read of the stored record, under retention and erasure): `unavailable`
 * as soon as one is erased or expired, so a replay never shows what the live stream no longer may.
 * A step without text has no record and is skipped; steps run up to the turn's `maxSteps`.
 */
export async function readSteps(
  config: ResolvedConfig,
  scope: Scope,
  rootKey: string,
  after: number,
): Promise<
  | { readonly status: "ok"; readonly steps: readonly StoredStep[] }
  | { readonly status: "unavailable" }
> {
  if (!Number.isSafeInteger(after) || after < 0)
    throw new ValidationError("after", "step", "after is a step number (0 for the first)");
  const maxSteps = config.limits?.maxSteps ?? config.maxCalls;
  const steps: StoredStep[] = [];
  for (let step = after + 1; step <= maxSteps; step++) {
    const record = await config.stores.results.get(
      scope,
      `${rootKey}:step:${step}`,
      config.clock.now(),
    );
    if (!record) continue;
    if (record.state !== "stored") return { status: "unavailable" };
    const envelope = record.envelope as { step: number; text: string };
    steps.push({ step: envelope.step, text: envelope.text });
  }
  return { status: "ok", steps };
}
