import type { ConversationView, UncertainTurnEvent } from "@alma-harness/conversation";
import type { Scope } from "@alma-harness/core";

interface Live {
  readonly scope: Scope;
  readonly sessionId: string;
  readonly startedAt: number;
  done: Promise<ConversationView | undefined>;
}

/**
 * The turns this process is running, by root key. Tools and the permission desk use it to learn
 * which tenant and person a turn belongs to: Alma hands tools the turn id, never the scope, and the
 * host derived that scope from a verified token before it started the turn. It also lets a retry
 * that reads `in_progress` wait for the live turn, and tests wait until everything has settled.
 */
export class LiveTurns {
  readonly #live = new Map<string, Live>();

  /**
   * Registers the turn before it starts (a tool can run on the first step), runs it, and keeps the
   * first registration when a retry of a running key arrives, so the owner's result stays waitable.
   */
  run(
    rootKey: string,
    scope: Scope,
    sessionId: string,
    now: number,
    start: () => Promise<ConversationView>,
  ): Promise<ConversationView> {
    const existing = this.#live.get(rootKey);
    if (existing) return start();
    const entry: Live = { scope, sessionId, startedAt: now, done: Promise.resolve(undefined) };
    this.#live.set(rootKey, entry);
    let promise: Promise<ConversationView>;
    try {
      promise = start();
    } catch (error) {
      this.#live.delete(rootKey);
      throw error;
    }
    entry.done = promise.then(
      (view) => view,
      () => undefined,
    );
    void entry.done.then(() => {
      if (this.#live.get(rootKey) === entry) this.#live.delete(rootKey);
    });
    return promise;
  }

  /** Same as `run` for a stream whose result promise is created by `start`. */
  track<T extends { readonly result: Promise<ConversationView> }>(
    rootKey: string,
    scope: Scope,
    sessionId: string,
    now: number,
    start: () => T,
  ): T {
    let handle: T | undefined;
    void this.run(rootKey, scope, sessionId, now, () => {
      handle = start();
      return handle.result;
    }).catch(() => undefined);
    return handle as T;
  }

  owner(rootKey: string): { readonly scope: Scope; readonly sessionId: string } | undefined {
    const live = this.#live.get(rootKey);
    return live ? { scope: live.scope, sessionId: live.sessionId } : undefined;
  }

  /** The live turn's view once it settles, or undefined when it is not live here or `ms` passes first. */
  async wait(rootKey: string, ms: number): Promise<ConversationView | undefined> {
    const live = this.#live.get(rootKey);
    if (!live) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), Math.max(0, ms));
    });
    try {
      return await Promise.race([live.done, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  get size(): number {
    return this.#live.size;
  }

  /** Resolves when no turn is running (including turns started while waiting). */
  async idle(): Promise<void> {
    while (this.#live.size > 0) await Promise.all([...this.#live.values()].map((l) => l.done));
  }
}

/** An uncertain turn as the runner reported it, kept for the operator (since this process started). */
export interface UncertainRecord extends Omit<UncertainTurnEvent, "scope"> {
  readonly org: string;
  readonly uid: string;
  readonly at: number;
}

/**
 * The host's directory: the people it knows per tenant (the clinic's patients, plus every verified
 * token seen since start), and the uncertain turns the runner reported. Stores partition by
 * `(org, uid)` and offer no cross-person listing, so the operator views ask the directory whom to
 * list for a tenant.
 */
export class Directory {
  readonly #people = new Map<string, Set<string>>();
  readonly #uncertain: UncertainRecord[] = [];

  constructor(
    seed: Readonly<Record<string, readonly string[]>>,
    private readonly limit = 500,
  ) {
    for (const [org, uids] of Object.entries(seed)) this.#people.set(org, new Set(uids));
  }

  saw(scope: Scope): void {
    let set = this.#people.get(scope.org);
    if (!set) {
      set = new Set();
      this.#people.set(scope.org, set);
    }
    set.add(scope.uid);
  }

  people(org: string): readonly string[] {
    return [...(this.#people.get(org) ?? [])].sort();
  }

  scopes(org?: string): readonly Scope[] {
    const orgs = org === undefined ? [...this.#people.keys()] : [org];
    return orgs.flatMap((o) => this.people(o).map((uid) => ({ org: o, uid })));
  }

  uncertain(event: UncertainTurnEvent, at: number): void {
    const { scope, ...rest } = event;
    this.#uncertain.push({ ...rest, org: scope.org, uid: scope.uid, at });
    if (this.#uncertain.length > this.limit) this.#uncertain.shift();
  }

  uncertainTurns(org?: string): readonly UncertainRecord[] {
    return this.#uncertain.filter((u) => org === undefined || u.org === org);
  }
}
