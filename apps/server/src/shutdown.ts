import { HttpError } from "./http/errors.js";

/**
 * The host's shutdown state, one per host. `begin` stops admitting: a new turn or event batch
 * answers 503 `shutting_down` (retryable, `Retry-After`), while turns already running go on.
 * `signal` is every turn's execution signal; `abortTurns` fires it once the grace period is over,
 * so a turn still running then is cancelled by the runner (which frees its session) instead of
 * being cut off with the process.
 */
export class Shutdown {
  #draining = false;
  readonly #turns = new AbortController();

  get draining(): boolean {
    return this.#draining;
  }

  /** The signal every turn runs under. */
  get signal(): AbortSignal {
    return this.#turns.signal;
  }

  begin(): void {
    this.#draining = true;
  }

  abortTurns(): void {
    this.#turns.abort(new Error("the host is shutting down"));
  }

  /** Throws the typed 503 once shutdown has begun. */
  admit(): void {
    if (this.#draining) {
      throw new HttpError(
        "shutting_down",
        "the host is shutting down and admits no new turns; retry the same request later",
        {
          retryable: true,
          headers: { "retry-after": "5", connection: "close" },
        },
      );
    }
  }
}
