import { ProviderError } from "@alma-harness/core";

/** The synthesized result text for a call that never ran because the turn was cancelled. */
export const CANCELLED_BEFORE_EXECUTION = "cancelled before execution";
/** Cleanup after an abort waits at most this long for code that ignores the signal. */
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

/** Waits for settled work at most `ms` of real time; never rejects. */
export function settleWithin(work: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    work.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}
