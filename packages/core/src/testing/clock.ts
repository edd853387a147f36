import type { Clock, IdSource } from "../runtime-seams.js";

interface Sleeper {
  readonly due: number;
  readonly order: number;
  readonly resolve: () => void;
  readonly cleanup: () => void;
}

/** 2026-01-01T00:00:00.000Z: a fixed, readable start so days and deadlines are deterministic. */
export const MANUAL_CLOCK_START = Date.UTC(2026, 0, 1);

/**
 * A clock that moves only when told. `sleep` resolves when `advance` reaches its due time (in due
 * order, ties in call order); an aborted sleep rejects with the signal's reason and is forgotten.
 * Nothing here ever waits for real time.
 */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];
  #order = 0;

  constructor(start: number = MANUAL_CLOCK_START) {
    if (!Number.isSafeInteger(start) || start < 0)
      throw new RangeError("start must be non-negative integer epoch milliseconds");
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** Sleepers not yet woken. */
  get pending(): number {
    return this.#sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0)
      return Promise.reject(new RangeError("sleep(ms) needs a finite, non-negative ms"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (ms === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      const sleeper: Sleeper = {
        due: this.#now + ms,
        order: this.#order++,
        resolve,
        cleanup: () => signal?.removeEventListener("abort", onAbort),
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  /** Moves time forward by `ms` and wakes every sleeper now due. */
  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0)
      throw new RangeError("advance(ms) needs a non-negative integer");
    this.#now += ms;
    const due = this.#sleepers
      .filter((s) => s.due <= this.#now)
      .sort((a, b) => a.due - b.due || a.order - b.order);
    this.#sleepers = this.#sleepers.filter((s) => s.due > this.#now);
    for (const sleeper of due) {
      sleeper.cleanup();
      sleeper.resolve();
    }
  }

  /** Moves time to `ms` (never backwards). */
  set(ms: number): void {
    if (ms < this.#now) throw new RangeError("a manual clock never goes backwards");
    this.advance(ms - this.#now);
  }
}

/** Ids `prefix_1`, `prefix_2`, … counted per prefix: readable and stable across runs. */
export class SequentialIds implements IdSource {
  readonly #counters = new Map<string, number>();

  next(prefix: string): string {
    if (typeof prefix !== "string" || !/^[A-Za-z0-9_.:-]{1,64}$/.test(prefix)) {
      throw new RangeError("an id prefix is 1-64 characters of [A-Za-z0-9_.:-]");
    }
    const n = (this.#counters.get(prefix) ?? 0) + 1;
    this.#counters.set(prefix, n);
    return `${prefix}_${n}`;
  }
}
