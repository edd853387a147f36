import { type Clock, ProviderError } from "@alma-harness/core";

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
    stop.abort();
  }
}
