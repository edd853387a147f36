import { type Clock, ProviderError, systemClock } from "@alma-harness/core";

/** The synthesized result text for a call that never ran because the turn was cancelled. */
export const CANCELLED_BEFORE_EXECUTION = "cancelled before execution";
/** Cleanup after an abort waits at most this long (on the engine's clock) for code that ignores the signal. */
export const CLEANUP_GRACE_MS = 100;

export class AbortedError extends Error {
  constructor(readonly reason: "cancelled" | "deadline" | "timeout") {
    super(reason === "cancelled" ? "the turn was cancelled" : reason === "deadline" ? "the turn's deadline passed" : "the model round timed out");
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
export function startTimer(clock: Clock, ms: number, onFire: () => void, owner?: AbortSignal): () => void {
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
export function abortRacer(signal: AbortSignal): { race<T>(work: Promise<T>): Promise<T>; interrupt(): void } {
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

/** Per signal, one promise that rejects with the abort reason: every race on the signal shares its one listener. */
const abortPromises = new WeakMap<AbortSignal, Promise<never>>();

function abortPromiseOf(signal: AbortSignal): Promise<never> {
  let aborted = abortPromises.get(signal);
  if (aborted === undefined) {
    aborted = new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => reject(abortReason(signal)), { once: true });
    });
    // Handled here so an abort nobody is racing at that moment is never an unhandled rejection.
    aborted.then(undefined, () => undefined);
    abortPromises.set(signal, aborted);
  }
  return aborted;
}

/** Races work against a signal: an abort rejects at once, even if the work ignores the signal. */
export function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.then(undefined, () => undefined);
    return Promise.reject(abortReason(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * `raceAbort` for a signal the engine owns for one turn (the turn's, a dispatch's, a call's): every
 * race on it shares one listener instead of adding and removing its own. Each race stays attached
 * to the signal's abort promise until the signal is dropped with its turn, so it is never used on a
 * long-lived signal (the public `raceAbort` is the one for those).
 */
export function raceOwned<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    work.then(undefined, () => undefined);
    return Promise.reject(abortReason(signal));
  }
  return Promise.race([work, abortPromiseOf(signal)]);
}

export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof AbortedError || reason instanceof ProviderError) return reason;
  return new AbortedError("cancelled");
}

/** Throws the signal's reason when it has fired: the checkpoint before every effect. */
export function checkpoint(signal: AbortSignal): void {
  if (signal.aborted) throw abortReason(signal);
}

/** A controller that also aborts (with the same reason) when `parent` does; `dispose` unlinks it. */
export function linkedController(parent: AbortSignal): { readonly controller: AbortController; dispose(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener("abort", onAbort, { once: true });
  return { controller, dispose: () => parent.removeEventListener("abort", onAbort) };
}

/** Waits for work to settle, at most `ms` on the engine's clock; never rejects. */
export async function settleWithin(work: Promise<unknown>, ms: number, clock: Clock): Promise<void> {
  const stop = new AbortController();
  const grace = clock.sleep(ms, stop.signal).then(
    () => undefined,
    () => undefined,
  );
  try {
    await Promise.race([
      work.then(
        () => undefined,
        () => undefined,
      ),
      grace,
    ]);
  } finally {
    stop.abort(RELEASED);
  }
}
