import {
  dataFields,
  type JsonValue,
  type ParkedTurn,
  type ParkedTurnStore,
  type ParkedTurnSummary,
  type RoutingIntent,
  ScopeFencedError,
  type Scope,
  ValidationError,
} from "@alma-harness/core";
import { type PendingAsk, readContinuation, type TurnOutcome } from "@alma-harness/loop";
import type { ResolvedConfig } from "./config.js";
import { type Checkpoints, storedRecord } from "./checkpoints.js";
import { type TurnRef, uncertain } from "./uncertain.js";
import type { AwaitingAsk, ConversationView } from "./views.js";

/**
 * What the runner keeps of a request beside the loop's continuation, so a resume in any process
 * rebuilds the same turn: the intent and grant bound it (the loop checks they are the parked
 * turn's), `maxCalls` narrows it, the binding ties it to its root.
 */
export interface ParkedRequest {
  readonly binding: string;
  readonly intent: RoutingIntent;
  readonly maxCalls: number;
  readonly trigger?: string;
  readonly toolProfile?: string;
}

/** The record a parked turn stores: the runner's request and the loop's continuation, versioned. */
export interface ParkedRecord {
  readonly v: 1;
  readonly request: ParkedRequest;
  readonly loop: JsonValue;
}

const RECORD_FIELDS = new Set(["v", "request", "loop"]);

/** Reads a stored parked record back as data (a record of another shape is a typed error). */
export function readParkedRecord(raw: unknown): ParkedRecord {
  const r = dataFields(raw, "parked");
  if (Object.keys(r).some((k) => !RECORD_FIELDS.has(k)) || r.v !== 1)
    throw new ValidationError("parked", "record", "not a v1 parked record");
  const q = dataFields(r.request, "parked.request") as unknown as ParkedRequest;
  if (typeof q.binding !== "string" || typeof q.maxCalls !== "number" || !q.intent)
    throw new ValidationError("parked.request", "record", "not a parked request");
  return { v: 1, request: q, loop: r.loop as JsonValue };
}

/** The parking store of a runner configured to park its asks (`asks: "park"`). */
export function parkingOf(config: ResolvedConfig): ParkedTurnStore | undefined {
  return config.asks === "park" ? config.stores.parked : undefined;
}

/** A parked turn as its caller sees it: the asks, content-free, and when they expire. */
export function awaitingView(turn: {
  readonly rootKey: string;
  readonly asks: ParkedTurnSummary["asks"];
  readonly expiresAt: number;
}): ConversationView {
  const asks = undecided(turn);
  return { status: "awaiting_approval", rootKey: turn.rootKey, asks, expiresAt: turn.expiresAt };
}

/** A turn's undecided asks as a caller sees them: ids, tool, action, digest, expiry. */
function undecided(turn: {
  readonly asks: ParkedTurnSummary["asks"];
  readonly expiresAt: number;
}): readonly AwaitingAsk[] {
  return turn.asks
    .filter((a) => !a.decision)
    .map((a) => ({
      askId: a.askId,
      callId: a.callId,
      tool: a.tool,
      action: a.action,
      digest: a.digest,
      expiresAt: turn.expiresAt,
    }));
}

/**
 * Stores a run that ended `awaiting_approval`: its continuation and asks, in the transaction that
 * moves its admission's deadline to the asks' expiry (`approvalTtlMs` from now). A park the store
 * refuses (the admission fenced, the scope fenced, the store failing) leaves the turn uncertain.
 */
export async function parkTurn(
  config: ResolvedConfig,
  parked: ParkedTurnStore,
  a: TurnRef,
  request: ParkedRequest,
  outcome: Extract<TurnOutcome, { status: "awaiting_approval" }>,
  checkpoints?: Checkpoints,
): Promise<ConversationView> {
  const now = config.clock.now();
  const expiresAt = now + config.approvalTtlMs;
  const asks = outcome.asks.map((p: PendingAsk) => ({
    askId: p.askId,
    callId: p.callId,
    tool: p.tool,
    action: p.action,
    digest: p.digest,
  }));
  const held = checkpoints?.held ?? new Set<string>();
  const { continuation, outputs } = storedRecord(request, outcome.continuation, held);
  try {
    const turn = await parked.park({
      scope: a.scope,
      sessionId: a.sessionId,
      rootKey: a.rootKey,
      admissionId: a.admissionId,
      continuation,
      ...(outputs.length > 0 ? { outputs } : {}),
      asks,
      now,
      expiresAt,
    });
    checkpoints?.kept(outputs);
    await config.stores.barrier?.commit();
    return awaitingView(turn);
  } catch (error) {
    await parked.done(a.scope, a.rootKey, a.admissionId).catch(() => false);
    return uncertain(
      config,
      a,
      error instanceof ScopeFencedError ? "scope_fenced" : "continuation",
    );
  }
}

/** The parked turn of a root, if the runner parks and the store has it (a failed read: none). */
export async function parkedOf(
  config: ResolvedConfig,
  scope: Scope,
  rootKey: string,
): Promise<Awaited<ReturnType<ParkedTurnStore["get"]>>> {
  const parked = parkingOf(config);
  return parked ? await parked.get(scope, rootKey) : undefined;
}

/**
 * One undecided ask of a parked turn as an operator's listing shows it: where it waits, what it
 * asks (the call's arguments, as the model wrote them: for the operator only, never the patient),
 * its digest and its expiry.
 */
export interface ParkedAskView extends AwaitingAsk {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly rootKey: string;
  /** The call's arguments parsed (a string when they are not JSON). */
  readonly input: JsonValue;
  readonly parkedAt: number;
}

/** The undecided asks of a parked turn, with their calls' arguments from its continuation. */
export function askViews(turn: ParkedTurn): readonly ParkedAskView[] {
  if (turn.state !== "parked") return [];
  let calls: readonly { readonly id: string; readonly arguments: string }[] = [];
  try {
    const next = readContinuation(readParkedRecord(turn.continuation).loop, turn.outputs).next;
    if (next.kind === "run_tools") calls = next.calls;
  } catch {
    // a record this runtime cannot read shows its asks without their arguments
  }
  return undecided(turn).map((a) => ({
    ...a,
    scope: turn.scope,
    sessionId: turn.sessionId,
    rootKey: turn.rootKey,
    input: parsed(calls.find((c) => c.id === a.callId)?.arguments),
    parkedAt: turn.parkedAt,
  }));
}

function parsed(text: string | undefined): JsonValue {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}
