import type { TriggerSource } from "@alma-harness/core";

/**
 * The host clock as a `TriggerSource`: fires every `everyMs` (at least one second) and never twice
 * at once — a fire that is still running when the next is due makes the next wait for it, so a slow
 * tick delays the following one instead of overlapping it. `stop` clears the timer and resolves
 * once the fire in progress (if any) has settled; a fire's rejection is swallowed (the runner
 * reports its own failures in its tick report, which `onFire` receives).
 */
export function intervalTrigger(opts: {
  readonly everyMs: number;
  readonly clock?: () => number;
}): TriggerSource {
  if (!Number.isSafeInteger(opts.everyMs) || opts.everyMs < 1000)
    throw new TypeError("everyMs must be an integer of at least 1000");
  const clock = opts.clock ?? Date.now;
  let timer: ReturnType<typeof setInterval> | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  return Object.freeze({
    start(fire: (now: number) => Promise<void>): void {
      if (timer !== undefined || stopped) return;
      const once = () => {
        if (running || stopped) return;
        running = fire(clock())
          .catch(() => undefined)
          .finally(() => {
            running = undefined;
          });
      };
      timer = setInterval(once, opts.everyMs);
      // A host's tick must not keep the process alive on its own.
      timer.unref?.();
    },
    async stop(): Promise<void> {
      stopped = true;
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      await running;
    },
  });
}
