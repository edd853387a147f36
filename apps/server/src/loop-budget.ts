/** How much of one event-loop iteration queued work may take before the loop polls again. */
export const DEFAULT_LOOP_BUDGET_MS = 10;

/**
 * A fair share of the event loop. Node runs everything that became ready together back to back in
 * one iteration: the requests it parsed in one poll, or turns whose token checks finished in one
 * batch (on the embedded store a turn's work never yields to the loop: each store call is
 * synchronous). A burst then holds every socket, a health check's included, for as long as all of
 * it takes. Work that enters here waits its turn in arrival order instead, and each iteration lets
 * through only what fits in `budgetMs` (at least one): the loop polls its sockets in between.
 */
export class LoopBudget {
  readonly #waiting: (() => void)[] = [];
  #draining = false;

  constructor(readonly budgetMs: number = DEFAULT_LOOP_BUDGET_MS) {
    if (!(budgetMs > 0)) throw new RangeError("the loop budget must be positive");
  }

  /** Resolves when the caller's work may run. */
  enter(): Promise<void> {
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      if (this.#draining) return;
      this.#draining = true;
      setImmediate(() => void this.#drain());
    });
  }

  async #drain(): Promise<void> {
    const started = performance.now();
    do {
      this.#waiting.shift()?.();
      // The work just let through runs its synchronous part before the budget is read again.
      await null;
    } while (this.#waiting.length > 0 && performance.now() - started < this.budgetMs);
    if (this.#waiting.length > 0) setImmediate(() => void this.#drain());
    else this.#draining = false;
  }
}
