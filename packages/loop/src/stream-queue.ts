/**
 * The one queue behind both streams (the engine's `streamTurn` and the conversation's): bounded,
 * one waiting reader, never waited on by the writer. What happens when it is full is the caller's
 * rule (the engine drops live events, the conversation detaches its reader with a resync error).
 */
export class StreamQueue<T> {
  readonly #items: T[] = [];
  #waiter: (() => void) | undefined;

  constructor(readonly limit: number) {}

  get length(): number {
    return this.#items.length;
  }

  /** Adds the item unless the queue is full (`force`: the final item always fits); wakes the reader. */
  offer(item: T, force = false): boolean {
    if (!force && this.#items.length >= this.limit) return false;
    this.#items.push(item);
    this.wake();
    return true;
  }

  take(): T | undefined {
    return this.#items.shift();
  }

  clear(): void {
    this.#items.length = 0;
  }

  /** Wakes the waiting reader, if any. */
  wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }

  /** Resolves at the next `wake` (or `offer`). */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#waiter = resolve;
    });
  }
}
