/** Injected time: every timestamp and deadline in Alma reads this, so tests never sleep. */
export interface Clock {
  now(): number;
  /** Resolves after `ms` on this clock (a manual clock resolves when advanced). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Injected ids: `next("turn")` → a fresh id with that prefix. */
export interface IdSource {
  next(prefix: string): string;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

export const randomIds: IdSource = {
  next: (prefix) => `${prefix}_${globalThis.crypto.randomUUID().replaceAll("-", "")}`,
};
