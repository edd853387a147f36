import {
  type CallKind,
  capsCrossedBy,
  type CostReceipt,
  type Fence,
  type ModelChoice,
  type ModelClient,
  type ModelRequest,
  priceUsage,
  ProviderError,
  ScopeFencedError,
  SettlementConflictError,
  StaleFenceError,
  stopTag,
  type UncertainCause,
  type UsageEvidence,
  utcDay,
  ZERO_USAGE,
} from "@alma-harness/core";
import { AbortedError, abortReason, openRound } from "./abort.js";
import type { Ledger } from "./account.js";
import { attestedRejection } from "./attest.js";
import { StreamInvalidError, StreamTornError, UncertainCallError } from "./errors.js";
import type { CallIdentity, CallOptions, CallOutcome, ResolvedCallsConfig } from "./types.js";
import { collectStep, type StepOutput, type StreamSeen } from "./stream-validate.js";
import { costTrail, type RouteOptions, servedTrail } from "./trails.js";

/** One claimed call, as `run` hands it on: plain data and the turn's ledger. */
export interface ClaimedCall {
  readonly config: ResolvedCallsConfig;
  readonly identity: CallIdentity;
  readonly client: ModelClient;
  readonly choice: ModelChoice;
  readonly request: ModelRequest;
  readonly options: CallOptions;
  readonly fence: Fence;
  readonly books: Ledger;
  /** The worst case the turn's ledger holds for this call until it settles. */
  readonly worst: number;
  /** Spend read before the call, the base of the crossings it reports (absent: no session or tenant-day cap). */
  readonly before: { readonly sessionMicros: number; readonly tenantDayMicros: number } | undefined;
  readonly now: number;
}

/**
 * Opens the stream under the round's own deadline and the turn's signal, validates it, settles it.
 * A refusal attested before anything streamed settles at zero and is returned as `rejected`.
 */
export async function dispatchAndSettle(call: ClaimedCall): Promise<CallOutcome> {
  const { config, options, fence, now, client, request, choice } = call;
  const turn = options.signal;
  const round = openRound(config.clock, options, now);
  const seen: StreamSeen = { content: 0, usage: undefined };
  let output: StepOutput | undefined;
  let rejected:
    | {
        readonly proof: NonNullable<ReturnType<typeof attestedRejection>>;
        readonly error: ProviderError;
      }
    | undefined;
  try {
    if (round.signal.aborted) {
      await cancelUnsent(call, "aborted");
      throw abortReason(round.signal);
    }
    // Committed before any byte leaves: a crash after this line is a `dispatching` record the sweep fences.
    await dispatchWrite(call);
    const stream = client.stream(request, round.signal);
    // With a usage inbox, a stream the round cuts is read on for its late usage (`late-usage.ts`).
    const watched = config.late
      ? config.late.watch(stream, round.signal, call.identity, choice)
      : stream;
    output = await collectStep(watched, options.seenCallIds, round.race, seen, {
      provider: client.provider,
      model: request.model,
    });
  } catch (error) {
    const proof = attestedRejection(error, client, choice, seen, turn);
    if (error instanceof UncertainCallError) throw error;
    if (proof === undefined) {
      // No effect of this round is kept; what was sent is on the journal with unknown usage, and
      // its reservation stays held: it may have been spent.
      await config.journal.receive(fence, { status: "unknown" }, now).catch(() => undefined);
      throw classify(call.identity.kind, client, error, turn);
    }
    rejected = { proof, error: error as ProviderError };
  } finally {
    round.release();
  }
  if (rejected || !output) {
    const { proof, error } = rejected as NonNullable<typeof rejected>;
    const receipt = await settle(call, { status: "known", usage: ZERO_USAGE }, "none");
    return { status: "rejected", proof, error, receipt };
  }
  const receipt = await settle(call, output.evidence, output.stopReason);
  const upstream =
    output.evidence.status === "known" || output.evidence.status === "unpriced"
      ? output.evidence.upstream
      : undefined;
  await servedTrail(config.audit, call.identity, choice, options, receipt, now, {
    ...(upstream !== undefined ? { upstream } : {}),
    ...(output.refusal !== undefined ? { refusal: output.refusal } : {}),
  });
  return { status: "settled", output, receipt };
}

/**
 * The journal's `dispatching` write. Its failure is a store failure before the provider: nothing
 * was sent, which the journal must still prove before another attempt (`unsent`). A scope fence
 * that refused it (`ScopeFencedError`, the record left `prepared`) ends the call as a fence at its
 * claim does: the claim is cancelled (`scope_fenced`, its reservation released), nothing was sent,
 * and the turn ends `reconciliation_required` (`scope_fenced`), never tried again.
 */
async function dispatchWrite(call: ClaimedCall): Promise<void> {
  try {
    await call.config.journal.dispatch(call.fence, call.now);
  } catch (error) {
    if (error instanceof ScopeFencedError) {
      await cancelUnsent(call, "scope_fenced");
      throw new UncertainCallError(
        "scope_fenced",
        "the turn's scope was fenced before the dispatch: nothing was sent",
        error,
      );
    }
    throw new UncertainCallError(
      `call:${call.identity.kind}:error`,
      "the journal could not record the dispatch; nothing was sent",
      error,
      "unsent",
    );
  }
}

/**
 * A claimed call that is not sent: the turn's books stop holding its worst case, and the journal
 * records `not_dispatched` with `cause` (the store releases its reservation in that transaction).
 * A cancel that fails leaves the record `prepared`: the sweep closes it as not dispatched.
 */
async function cancelUnsent(call: ClaimedCall, cause: "aborted" | "scope_fenced"): Promise<void> {
  call.books.reservedMicros -= call.worst;
  await call.config.journal.cancelPrepared(call.fence, cause, call.now).then(
    () => {
      call.books.unsettled.delete(call.identity.operationId);
    },
    () => undefined,
  );
}

/** What settling a call reads: the claimed call without its client, request and stream options. */
export type SettlingCall = Pick<
  ClaimedCall,
  "config" | "identity" | "choice" | "fence" | "books" | "worst" | "before" | "now"
> & {
  readonly options: RouteOptions;
};

/** Keeps the evidence, prices it, settles once, completes the journal record, writes the cost trail. */
async function settle(
  call: SettlingCall,
  evidence: UsageEvidence,
  stop: string,
): Promise<CostReceipt> {
  try {
    await call.config.journal.receive(call.fence, evidence, call.now);
  } catch (error) {
    throw new UncertainCallError(
      `call:${call.identity.kind}:error`,
      (error as Error)?.message ?? String(error),
      error,
    );
  }
  return (await settleReceived(call, evidence, stop, false)).receipt;
}

/**
 * The one settlement rule, after the evidence is in the journal: known usage priced at the tier
 * the wire says served, one receipt with the caps it crosses, settled once under the stable id
 * `<operationId>:settlement` (the store releases the reservation in the same transaction), the
 * journal settled and completed, the account moved, the cost trail written.
 *
 * `shared` (the deferred face, where two collectors may settle one call): a receipt another
 * settler already applied under the id is read back and returned `applied: false` (a different
 * receipt is theirs, never a second spend), a journal transition another settler already made is
 * accepted, and only the settler whose receipt applied moves the account and writes the trail.
 */
export async function settleReceived(
  call: SettlingCall,
  evidence: UsageEvidence,
  stop: string,
  shared: boolean,
): Promise<{ readonly receipt: CostReceipt; readonly applied: boolean }> {
  const { config, identity, fence, now, books } = call;
  const kind = identity.kind;
  let receipt: CostReceipt;
  let applied = true;
  try {
    if (evidence.status !== "known")
      throw new UncertainCallError(
        `call:${kind}:unsettled:${stopTag(stop)}`,
        `usage of ${identity.operationId} is ${evidence.status}; its cost cannot be settled`,
        undefined,
        "retry",
      );
    const priced = priceUsage(config.prices, call.choice.model, evidence.usage);
    if (priced.status !== "priced") {
      throw new UncertainCallError(
        `call:${kind}:unsettled:${stopTag(stop)}`,
        `usage of ${identity.operationId} cannot be priced (missing ${priced.missing})`,
      );
    }
    const draft: CostReceipt = {
      settlementId: `${identity.operationId}:settlement`,
      operationId: identity.operationId,
      turnId: identity.turnId,
      kind,
      clientId: call.choice.clientId,
      model: call.choice.model,
      serviceTier: priced.serviceTier,
      usage: evidence.usage,
      usdMicros: priced.usdMicros,
      priceVersion: priced.priceVersion,
      capsCrossed: crossings(call, priced.usdMicros),
    };
    // The one accounting path: a replay of this id returns the original receipt, a changed one
    // throws. The store releases the call's reservation in the same transaction.
    const settled = await settleOnce(call, draft, shared);
    receipt = settled.receipt;
    applied = settled.applied;
    if (applied) {
      books.reservedMicros -= call.worst;
      books.spentMicros += receipt.usdMicros;
      books.receipts.push(receipt);
    }
    books.unsettled.delete(identity.operationId);
    await journalStep(shared, () => config.journal.settle(fence, receipt.settlementId, now));
    await journalStep(shared, () => config.journal.complete(fence, now));
  } catch (error) {
    if (error instanceof UncertainCallError) throw error;
    const cause: UncertainCause =
      error instanceof SettlementConflictError
        ? `call:${kind}:settlement_conflict`
        : `call:${kind}:error`;
    throw new UncertainCallError(cause, (error as Error)?.message ?? String(error), error);
  }
  if (applied || !shared)
    await costTrail(
      config.audit,
      identity,
      receipt,
      books,
      (cap) => config.caps[cap]?.onExceeded ?? "warn",
      now,
    );
  return { receipt, applied };
}

/** One settlement under the receipt's id; shared, a receipt another settler applied first is theirs. */
async function settleOnce(
  call: SettlingCall,
  draft: CostReceipt,
  shared: boolean,
): Promise<{ readonly receipt: CostReceipt; readonly applied: boolean }> {
  const { config, identity, now } = call;
  const input = {
    scope: identity.scope,
    sessionId: identity.sessionId,
    day: utcDay(now),
    receipt: draft,
    at: now,
    consumers: config.consumers,
  };
  try {
    const settled = await config.settlements.settle(input);
    return { receipt: settled.receipt, applied: settled.status === "applied" || !shared };
  } catch (error) {
    if (!shared || !(error instanceof SettlementConflictError)) throw error;
    const theirs = await config.settlements.get(identity.scope, draft.settlementId);
    if (theirs === undefined) throw error;
    return { receipt: theirs.receipt, applied: false };
  }
}

/** A journal transition; shared, a `StaleFenceError` is another settler's transition made first. */
async function journalStep(shared: boolean, step: () => Promise<unknown>): Promise<void> {
  try {
    await step();
  } catch (error) {
    if (!shared || !(error instanceof StaleFenceError)) throw error;
  }
}

/** The caps this call's settlement crosses: the turn's settled spend, and the session and tenant-day read before it. */
function crossings(call: SettlingCall, micros: number): CostReceipt["capsCrossed"] {
  const turn = call.books.spentMicros;
  const session = call.before?.sessionMicros ?? 0;
  const tenantDay = call.before?.tenantDayMicros ?? 0;
  return capsCrossedBy(
    call.config.caps,
    { turn, session, tenantDay },
    { turn: turn + micros, session: session + micros, tenantDay: tenantDay + micros },
  );
}

function classify(
  kind: CallKind,
  client: ModelClient,
  error: unknown,
  turnSignal: AbortSignal,
): UncertainCallError {
  if (turnSignal.aborted) {
    const reason = abortReason(turnSignal);
    const cause =
      reason instanceof AbortedError && reason.reason === "deadline" ? "deadline" : "cancelled";
    return new UncertainCallError(cause, reason.message, reason);
  }
  // Each of these is a call that did not complete: another attempt may follow (spec: call-retry).
  if (error instanceof AbortedError && error.reason === "timeout")
    return new UncertainCallError(
      `call:${kind}:aborted`,
      "the model round timed out",
      error,
      "retry",
    );
  if (error instanceof AbortedError && error.reason === "answer_by")
    return new UncertainCallError(`call:${kind}:deadline`, error.message, error, "retry");
  if (error instanceof StreamInvalidError)
    return new UncertainCallError(
      `call:${kind}:invalid:none:${error.rule}`,
      error.message,
      error,
      "retry",
    );
  if (error instanceof StreamTornError)
    return new UncertainCallError(`call:${kind}:torn:none`, error.message, error, "retry");
  // Only an attested refusal, settled at zero, is `rejected:<proof>`: a proof the evidence contradicts is an ordinary failure.
  if (error instanceof ProviderError)
    return new UncertainCallError(`call:${kind}:${error.kind}:none`, error.message, error, "retry");
  // Any other AbortError (a store's own, or one after a store failure) is never tried again.
  const foreignAbort = (error as Error | undefined)?.name === "AbortError";
  return new UncertainCallError(
    `call:${kind}:error`,
    `${client.id}: ${(error as Error)?.message ?? String(error)}`,
    error,
    foreignAbort ? undefined : "retry",
  );
}
