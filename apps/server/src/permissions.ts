import type { IdSource, JsonObject } from "@alma-harness/core";
import type {
  AskDecision,
  PermissionController,
  PermissionDecision,
  PermissionRequest,
} from "@alma-harness/loop";
import type { LiveTurns } from "./turns.js";

/** A permission ask waiting for the operator, as the console and the API show it. */
export interface PendingAsk {
  readonly id: string;
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly callId: string;
  readonly tool: string;
  readonly action: string;
  readonly subject: string;
  readonly input: JsonObject;
  readonly createdAt: number;
}

/** `shutdown`: the host stopped while the ask waited, and denied it (fail closed). */
export type AskState = "pending" | "approved" | "denied" | "expired" | "shutdown";
export type AskListener = (ask: PendingAsk, state: AskState) => void;
export type AnswerResult = "answered" | "unknown";

interface Waiting {
  readonly ask: PendingAsk;
  readonly settle: (answer: boolean | AskDecision, state: AskState) => void;
}

/** What a turn reads when the host stops while its ask waits: the kernel's, never a person's. */
const SHUTDOWN: AskDecision = Object.freeze({ allowed: false, by: "kernel", reason: "shutdown" });
/** An ask for a turn this process does not run: nobody here can show it. */
const NO_RESOLVER: AskDecision = Object.freeze({
  allowed: false,
  by: "kernel",
  reason: "no_resolver",
});

/**
 * The host's permission controller. `decide` is the policy: tools named in `askFor` ask the
 * operator, every other registered tool is allowed. `resolve` parks the ask until an operator
 * approves or denies it through the API; the engine's signal (cancellation, deadline or its
 * permission timeout) withdraws it, and the engine records that as a denial. Nothing here decides
 * for the operator, and an ask for a turn this process does not know is denied.
 */
export class PermissionDesk implements PermissionController {
  readonly #waiting = new Map<string, Waiting>();
  readonly #listeners = new Map<string, Set<AskListener>>();
  #closed = false;

  constructor(
    private readonly turns: LiveTurns,
    private readonly ids: IdSource,
    private readonly now: () => number,
    private readonly askFor: ReadonlySet<string>,
  ) {}

  decide(request: PermissionRequest): PermissionDecision {
    return this.askFor.has(request.tool) ? "ask" : "allow";
  }

  resolve(request: PermissionRequest, signal: AbortSignal): Promise<boolean | AskDecision> {
    if (this.#closed) return Promise.resolve(SHUTDOWN);
    const owner = this.turns.owner(request.turnId);
    if (!owner) return Promise.resolve(NO_RESOLVER);
    if (signal.aborted) return Promise.resolve(false);
    const ask: PendingAsk = {
      id: this.ids.next("ask"),
      org: owner.scope.org,
      uid: owner.scope.uid,
      sessionId: owner.sessionId,
      rootKey: request.turnId,
      callId: request.callId,
      tool: request.tool,
      action: request.action,
      subject: request.subject,
      input: request.input,
      createdAt: this.now(),
    };
    return new Promise<boolean | AskDecision>((resolve) => {
      const onAbort = () =>
        settle({ allowed: false, by: "kernel", reason: "cancelled" }, "expired");
      const settle = (answer: boolean | AskDecision, state: AskState) => {
        if (!this.#waiting.delete(ask.id)) return;
        signal.removeEventListener("abort", onAbort);
        this.#notify(ask, state);
        resolve(answer);
      };
      this.#waiting.set(ask.id, { ask, settle });
      signal.addEventListener("abort", onAbort, { once: true });
      this.#notify(ask, "pending");
    });
  }

  /** Pending asks, oldest first, optionally for one tenant. */
  pending(org?: string): readonly PendingAsk[] {
    return [...this.#waiting.values()]
      .map((w) => w.ask)
      .filter((a) => org === undefined || a.org === org);
  }

  /** The operator's answer; `unknown` when no such ask is waiting (answered, withdrawn or never made). */
  answer(id: string, allowed: boolean): AnswerResult {
    const waiting = this.#waiting.get(id);
    if (!waiting) return "unknown";
    waiting.settle(allowed, allowed ? "approved" : "denied");
    return "answered";
  }

  /**
   * Shutdown: every waiting ask is denied now (its turn goes on to settle and frees its session at
   * once, instead of holding it until the ask times out), and every later ask is denied unasked;
   * each denial is the kernel's (`shutdown`), so the model and the trail never read it as an
   * operator's. Returns how many were waiting.
   */
  close(): number {
    this.#closed = true;
    const waiting = [...this.#waiting.values()];
    for (const w of waiting) w.settle(SHUTDOWN, "shutdown");
    return waiting.length;
  }

  /** Follows the asks of one turn (for its SSE stream); returns the unsubscribe function. */
  subscribe(rootKey: string, listener: AskListener): () => void {
    let set = this.#listeners.get(rootKey);
    if (!set) {
      set = new Set();
      this.#listeners.set(rootKey, set);
    }
    set.add(listener);
    for (const w of this.#waiting.values())
      if (w.ask.rootKey === rootKey) listener(w.ask, "pending");
    return () => {
      set.delete(listener);
      if (set.size === 0) this.#listeners.delete(rootKey);
    };
  }

  #notify(ask: PendingAsk, state: AskState): void {
    for (const listener of this.#listeners.get(ask.rootKey) ?? []) {
      try {
        listener(ask, state);
      } catch {
        // a listener (a socket) never affects the ask
      }
    }
  }
}
