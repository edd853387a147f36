import {
  type Clock,
  type LateUsageSource,
  type ModelChoice,
  type ModelStreamEvent,
  type Usage,
  type UsageEvidence,
  type UsageInbox,
  usageProblem,
} from "@alma-harness/core";
import { AbortedError, RELEASED, startTimer } from "./abort.js";
import type { CallIdentity } from "./types.js";

/** How long a cut call's stream is read on after the cut, at most (the seed's "drain grace period"). */
export const LATE_USAGE_GRACE_MS = 60_000;
/** At most this many events are read after the cut: a stream that never ends cannot hold a loop forever. */
export const LATE_USAGE_MAX_EVENTS = 10_000;

/**
 * Late authoritative usage of cut calls, kept in a `UsageInbox` (seed 001, "UsageInbox"). When a
 * call's round is aborted (its round timeout, the turn's deadline, a cancellation) the governed call
 * has already thrown `UncertainCallError`, kept `unknown` usage in the journal and left the
 * reservation held; the stream is not closed at once but read on in the background, for at most
 * `graceMs` and `LATE_USAGE_MAX_EVENTS` events, without validating or keeping any content. When it
 * finishes with usage evidence (`known` or `unpriced`, counters well-formed), one observation is
 * recorded in the inbox. Nothing else moves: no settlement, receipt, spend, cap, journal record or
 * stored turn; a failing inbox is swallowed (the turn's outcome was decided at the cut). The stream
 * is closed when reading ends.
 */
export class LateUsage {
  readonly #inbox: UsageInbox;
  readonly #clock: Clock;
  readonly #graceMs: number;
  readonly #pending = new Set<Promise<void>>();

  constructor(inbox: UsageInbox, clock: Clock, graceMs = LATE_USAGE_GRACE_MS) {
    if (!inbox || typeof inbox.record !== "function")
      throw new TypeError("GovernedCalls: usageInbox is not a usage inbox");
    if (!Number.isSafeInteger(graceMs) || graceMs < 1)
      throw new TypeError("lateUsageGraceMs must be a positive integer");
    this.#inbox = inbox;
    this.#clock = clock;
    this.#graceMs = graceMs;
  }

  /** Resolves once every background read started so far has ended (and its observation, if any, was recorded or dropped). */
  async drained(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }

  /**
   * The call's stream, as the validator pulls it. Closing it while `round` is aborted (by anything
   * but the round's normal release) starts the background read instead of closing the source.
   */
  watch(
    stream: AsyncIterable<ModelStreamEvent>,
    round: AbortSignal,
    identity: CallIdentity,
    choice: ModelChoice,
  ): AsyncIterable<ModelStreamEvent> {
    return {
      [Symbol.asyncIterator]: () => {
        const source = stream[Symbol.asyncIterator]();
        const seen: Seen = { evidence: undefined, completed: false };
        let pending: Promise<IteratorResult<ModelStreamEvent>> | undefined;
        return {
          next: () => {
            const next = source.next().then((r) => {
              if (pending === next) pending = undefined;
              if (!r.done) observe(seen, r.value);
              return r;
            });
            pending = next;
            return next;
          },
          return: async (value?: unknown) => {
            const source_ = sourceOf(round);
            if (source_ === undefined) return closeQuietly(source, value);
            this.#track(this.#readOn(source, pending, seen, { identity, choice, source: source_ }));
            return { done: true, value: undefined };
          },
        };
      },
    };
  }

  #track(work: Promise<void>): void {
    const done = work.finally(() => this.#pending.delete(done));
    this.#pending.add(done);
  }

  async #readOn(
    source: AsyncIterator<ModelStreamEvent>,
    pending: Promise<IteratorResult<ModelStreamEvent>> | undefined,
    seen: Seen,
    call: CutCall,
  ): Promise<void> {
    const stop = new AbortController();
    const expired = new Promise<"expired">((resolve) => {
      const cancel = startTimer(this.#clock, this.#graceMs, () => resolve("expired"), stop.signal);
      stop.signal.addEventListener("abort", cancel, { once: true });
    });
    try {
      // The stream finished: its terminal frame, or its end after a usage event. Anything else (the
      // grace period or the event bound ran out first) is no final evidence.
      let finished = seen.completed;
      let next = pending ?? source.next();
      for (let events = 0; events < LATE_USAGE_MAX_EVENTS && !finished; events++) {
        const r = await Promise.race([next, expired]);
        if (r === "expired") break;
        if (r.done) {
          finished = true;
          break;
        }
        // The pull the cut abandoned is observed by the wrapper's own `next`.
        if (next !== pending) observe(seen, r.value);
        finished = seen.completed;
        if (!finished) next = source.next();
      }
      if (finished && seen.evidence) await this.#record(call, seen.evidence);
    } catch {
      // A late stream that fails is no evidence; the turn's outcome was decided at the cut.
    } finally {
      stop.abort(RELEASED);
      void closeQuietly(source);
    }
  }

  async #record(call: CutCall, evidence: Late): Promise<void> {
    const { identity, choice } = call;
    await this.#inbox
      .record({
        scope: identity.scope,
        sessionId: identity.sessionId,
        rootKey: identity.rootKey,
        turnId: identity.turnId,
        operationId: identity.operationId,
        kind: identity.kind,
        clientId: choice.clientId,
        model: choice.model,
        attribution: evidence.attribution,
        usage: evidence.usage,
        source: call.source,
        observedAt: this.#clock.now(),
      })
      .catch(() => undefined);
  }
}

interface Late {
  readonly attribution: "known" | "unpriced";
  readonly usage: Usage;
}

interface Seen {
  evidence: Late | undefined;
  completed: boolean;
}

interface CutCall {
  readonly identity: CallIdentity;
  readonly choice: ModelChoice;
  readonly source: LateUsageSource;
}

/** What the stream says about usage: the last usage event, the terminal frame's usage over it; `completed` at the terminal frame. */
function observe(seen: Seen, event: ModelStreamEvent): void {
  if (event === null || typeof event !== "object") return;
  if (event.type === "usage") {
    const late = lateOf(event.evidence);
    if (late) seen.evidence = late;
  } else if (event.type === "response_completed") {
    seen.completed = true;
    if (event.usage !== undefined && usageProblem(event.usage) === undefined)
      seen.evidence = { attribution: seen.evidence?.attribution ?? "known", usage: event.usage };
  }
}

function lateOf(evidence: UsageEvidence | undefined): Late | undefined {
  if (!evidence || (evidence.status !== "known" && evidence.status !== "unpriced"))
    return undefined;
  if (usageProblem(evidence.usage) !== undefined) return undefined;
  return { attribution: evidence.status, usage: evidence.usage };
}

/** Why the round was cut, as the inbox names it; undefined when it was not cut (its normal end, or a failure of the stream itself). */
function sourceOf(round: AbortSignal): LateUsageSource | undefined {
  if (!round.aborted || round.reason === RELEASED) return undefined;
  const reason: unknown = round.reason;
  if (reason instanceof AbortedError) {
    if (reason.reason === "timeout") return "stream_after_timeout";
    // The answer-by time is the turn's deadline drawn in (`call:<kind>:deadline`).
    if (reason.reason === "deadline" || reason.reason === "answer_by")
      return "stream_after_deadline";
  }
  return "stream_after_cancel";
}

async function closeQuietly(
  iterator: AsyncIterator<unknown>,
  value?: unknown,
): Promise<IteratorResult<ModelStreamEvent>> {
  try {
    await iterator.return?.(value);
  } catch {
    // closing an abandoned stream is best effort
  }
  return { done: true, value: undefined };
}
