import type { Clock } from "@alma-harness/core";
import { abortReason, RELEASED } from "@alma-harness/execution";

export {
  AbortedError,
  abortRacer,
  abortReason,
  RELEASED,
  startTimer,
} from "@alma-harness/execution";

/** The synthesized result text for a call that never ran because the turn was cancelled. */
export const CANCELLED_BEFORE_EXECUTION = "cancelled before execution";
/** Cleanup after an abort waits at most this long (on the engine's clock) for code that ignores the signal. */
export const CLEANUP_GRACE_MS = 100;

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

/** Throws the signal's reason when it has fired: the checkpoint before every effect. */
export function checkpoint(signal: AbortSignal): void {
  if (signal.aborted) throw abortReason(signal);
}

/** A controller that also aborts (with the same reason) when `parent` does; `dispose` unlinks it. */
export function linkedController(parent: AbortSignal): {
  readonly controller: AbortController;
  dispose(): void;
} {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener("abort", onAbort, { once: true });
  return { controller, dispose: () => parent.removeEventListener("abort", onAbort) };
}

/** Waits for work to settle, at most `ms` on the engine's clock; never rejects. */
export async function settleWithin(
  work: Promise<unknown>,
  ms: number,
  clock: Clock,
): Promise<void> {
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
