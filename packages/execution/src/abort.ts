import { type Clock, ProviderError, systemClock } from "@alma-harness/core";

const MESSAGES = {
  cancelled: "the turn was cancelled",
  deadline: "the turn's deadline passed",
  timeout: "the model round timed out",
  answer_by: "the call reached the turn's answer-by time",
} as const;

/** Why the engine aborted: the caller cancelled, the turn's deadline passed, or one model round timed out or reached the answer-by time. */
export class AbortedError extends Error {
  constructor(readonly reason: "cancelled" | "deadline" | "timeout" | "answer_by") {
    super(MESSAGES[reason]);
    this.name = "AbortedError";
  }
}

/**
 * The reason the engine gives when it releases a controller it owns at the end of normal work (a
 * round, a turn's timers, a grace wait). One shared value: an abort without a reason would build a
 * fresh `DOMException` each time. Nothing treats it as a cancellation of the turn.
 */
export const RELEASED: Error = new DOMException("This operation was aborted", "AbortError");

/**
 * Calls `onFire` once `ms` have passed on the engine's clock, unless the returned `cancel` runs
 * first (or `owner`, when given, aborts). The system clock's sleep is a plain timer, so it is armed
 * and cleared directly, with no signal or listener; any other clock gets one `sleep`, cancelled
 * through `owner` or through a controller of its own.
 */
export function startTimer(
  clock: Clock,
  ms: number,
  onFire: () => void,
  owner?: AbortSignal,
): () => void {
  if (clock === systemClock) {
    const timer = setTimeout(onFire, ms);
    return () => clearTimeout(timer);
  }
  if (owner) {
    clock.sleep(ms, owner).then(onFire, () => undefined);
    return () => undefined;
  }
  const stop = new AbortController();
  clock.sleep(ms, stop.signal).then(onFire, () => undefined);
  return () => stop.abort(RELEASED);
}

/**
 * Races successive pulls (one at a time) against a signal that only its owner aborts: the owner
 * calls `interrupt` right after each abort, so no listener is needed. An interrupted pull rejects at
 * once with the abort reason, even if the source ignores the signal; a pull started after the abort
 * rejects before it is awaited.
 */
export function abortRacer(signal: AbortSignal): {
  race<T>(work: Promise<T>): Promise<T>;
  interrupt(): void;
} {
  let rejectPending: ((error: Error) => void) | undefined;
  return {
    race<T>(work: Promise<T>): Promise<T> {
      if (signal.aborted) {
        work.then(undefined, () => undefined);
        return Promise.reject(abortReason(signal));
      }
      return new Promise<T>((resolve, reject) => {
        rejectPending = reject;
        work.then(
          (value) => {
            rejectPending = undefined;
            resolve(value);
          },
          (error: unknown) => {
            rejectPending = undefined;
            reject(error);
          },
        );
      });
    },
    interrupt(): void {
      const reject = rejectPending;
      rejectPending = undefined;
      if (reject && signal.aborted) reject(abortReason(signal));
    },
  };
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof AbortedError || reason instanceof ProviderError) return reason;
  return new AbortedError("cancelled");
}

/** One model round's cancellation: its signal, the racer its pulls go through, and its release. */
export interface Round {
  readonly signal: AbortSignal;
  readonly race: <T>(work: Promise<T>) => Promise<T>;
  /** Ends the round at the end of its work: the timer cleared, the turn's listener removed. */
  readonly release: () => void;
}

/**
 * A round bound to the turn's signal and cut at its own timeout or at the turn's answer-by time,
 * whichever comes first. Already stopped when the turn is aborted or the answer-by time has passed.
 */
export function openRound(
  clock: Clock,
  options: {
    readonly signal: AbortSignal;
    readonly roundTimeoutMs: number;
    readonly answerByAt?: number;
  },
  now: number,
): Round {
  const turn = options.signal;
  const round = new AbortController();
  // Only the round aborts itself (the turn's abort, the round's timer, its end), so each abort
  // interrupts the pending pull itself: no listener on the round's own signal.
  const racer = abortRacer(round.signal);
  const stop = (reason: unknown) => {
    round.abort(reason);
    racer.interrupt();
  };
  const onTurnAbort = () => stop(turn.reason);
  turn.addEventListener("abort", onTurnAbort, { once: true });
  if (turn.aborted) round.abort(turn.reason);
  // One timer for the round's own deadline, released with the round; never armed for a stopped round.
  const untilAnswerBy =
    options.answerByAt === undefined ? Number.POSITIVE_INFINITY : options.answerByAt - now;
  const byAnswer = untilAnswerBy <= options.roundTimeoutMs;
  if (byAnswer && untilAnswerBy <= 0 && !round.signal.aborted)
    round.abort(new AbortedError("answer_by"));
  const cancelTimer = round.signal.aborted
    ? undefined
    : startTimer(
        clock,
        byAnswer ? untilAnswerBy : options.roundTimeoutMs,
        () => stop(new AbortedError(byAnswer ? "answer_by" : "timeout")),
        round.signal,
      );
  return {
    signal: round.signal,
    race: racer.race,
    release: () => {
      cancelTimer?.();
      turn.removeEventListener("abort", onTurnAbort);
      round.abort(RELEASED);
    },
  };
}
