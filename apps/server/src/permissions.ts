import {
  type AskRefusal,
  AskRefusedError,
  type ConversationRunner,
  type ParkedAskView,
} from "@alma-harness/conversation";
import type { IdSource, JsonObject, JsonValue } from "@alma-harness/core";
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
  /** The authorization subject (an ask waiting in this process); a parked ask shows its input. */
  readonly subject?: string;
  readonly input: JsonObject | JsonValue;
  readonly createdAt: number;
  /** When the kernel denies it undecided (a parked ask); absent for one waiting in this process. */
  readonly expiresAt?: number;
  /** Milliseconds since it was asked, at the listing. */
  readonly ageMs: number;
  /** SHA-256 of the canonical `[tool, callId, input]` (a parked ask): what a decision is bound to. */
  readonly digest?: string;
}

/** `shutdown`: the host stopped while a non-durable ask waited, and denied it (fail closed). */
export type AskState = "pending" | "approved" | "denied" | "expired" | "shutdown";
export type AskListener = (ask: PendingAsk, state: AskState) => void;
export type AnswerResult = "answered" | "unknown" | AskRefusal;

interface Waiting {
  readonly ask: PendingAsk;
  readonly settle: (answer: boolean | AskDecision, state: AskState) => void;
}

/** A parked ask's id (the runner derives it); anything else can only be an ask waiting here. */
const PARKED_ASK = /^ask_[0-9a-f]{32}$/;

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
 * operator, every other registered tool is allowed. A main step's ask parks its turn in the store
 * (the runner's `asks: "park"`): the listing, the decisions and the resume go through the runner, so
 * they survive a restart and work from any process. An ask that cannot park (a delegate's) waits
 * here, in memory, as before: `resolve` holds it until an operator answers, the engine's signal
 * withdraws it, or shutdown denies it (the kernel's denial, never the operator's).
 */
export class PermissionDesk implements PermissionController {
  readonly #waiting = new Map<string, Waiting>();
  readonly #listeners = new Map<string, Set<AskListener>>();
  #closed = false;
  #runner: ConversationRunner | undefined;

  constructor(
    private readonly turns: LiveTurns,
    private readonly ids: IdSource,
    private readonly now: () => number,
    private readonly askFor: ReadonlySet<string>,
    private readonly orgs: () => readonly string[] = () => [],
  ) {}

  /** The runner whose parked asks this desk lists and decides (set once the runtime is open). */
  attach(runner: ConversationRunner): void {
    this.#runner = runner;
  }

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
      ageMs: 0,
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

  /** Pending asks, oldest first, optionally for one tenant: the parked ones from the store. */
  async pending(org?: string): Promise<readonly PendingAsk[]> {
    const now = this.now();
    const here = [...this.#waiting.values()]
      .map((w) => ({ ...w.ask, ageMs: now - w.ask.createdAt }))
      .filter((a) => org === undefined || a.org === org);
    const parked: PendingAsk[] = [];
    const runner = this.#runner;
    if (runner)
      for (const o of org === undefined ? this.orgs() : [org])
        for (const view of await runner.parkedAsks({ org: o })) parked.push(pendingOf(view, now));
    return [...parked, ...here].sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * The operator's answer: to an ask waiting here, or to a parked one (recorded durably, first
   * wins; once every ask of its turn is decided the turn goes on in the background, here).
   * `unknown` when no such ask waits; a refusal (`already_decided`, `expired`, ...) as its reason.
   */
  async answer(id: string, allowed: boolean, by = "operator"): Promise<AnswerResult> {
    const waiting = this.#waiting.get(id);
    if (waiting) {
      waiting.settle(allowed, allowed ? "approved" : "denied");
      return "answered";
    }
    const runner = this.#runner;
    const found = PARKED_ASK.test(id) ? await runner?.findAsk(id) : undefined;
    if (!runner || !found) return "unknown";
    let ready: boolean;
    try {
      const decision = allowed ? "approve" : "deny";
      ({ ready } = await runner.decideAsk({ scope: found.scope, askId: id, decision, by }));
    } catch (error) {
      if (error instanceof AskRefusedError) return error.reason;
      throw error;
    }
    this.#notify(pendingOf(found, this.now()), allowed ? "approved" : "denied");
    // Live from now (shutdown and a retry wait for it); the runner's `aroundResume` keeps this entry.
    if (ready)
      void this.turns
        .run(found.rootKey, found.scope, found.sessionId, this.now(), () =>
          runner.resume(found.scope, found.rootKey),
        )
        .catch(() => undefined);
    return "answered";
  }

  /**
   * Shutdown: asks waiting here (never parked ones: they stay in the store, and a restarted host
   * lists and resumes them) are denied now by the kernel (`shutdown`), and every later in-memory
   * ask is denied unasked. Returns how many were denied.
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

/** A parked ask as the console lists it. */
export function pendingOf(view: ParkedAskView, now: number): PendingAsk {
  return {
    id: view.askId,
    org: view.scope.org,
    uid: view.scope.uid,
    sessionId: view.sessionId,
    rootKey: view.rootKey,
    callId: view.callId,
    tool: view.tool,
    action: view.action,
    input: view.input,
    createdAt: view.parkedAt,
    expiresAt: view.expiresAt,
    ageMs: now - view.parkedAt,
    digest: view.digest,
  };
}
