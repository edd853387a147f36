import {
  type Block,
  type CostReceipt,
  type JsonValue,
  type Msg,
  type MsgMeta,
  type SnapshotLimits,
  snapshot,
  totalTokens,
  type Usage,
  ZERO_USAGE,
  addUsage,
} from "@alma-harness/core";
import type { TurnAccount } from "@alma-harness/execution";
import type { Continuation } from "./continuation.js";
import type { TurnCallFailure, TurnToolCall } from "./result.js";
import type { LoopEvent } from "./events.js";
import type { ResolvedMedia } from "./media.js";

/** The version of the context format each request records; bumped when the request shape changes. */
export const CONTEXT_VERSION = 1;

/**
 * Limits for copying data the engine itself built from checked parts: no limit can refuse it here.
 * The copy is frozen and certified, so the session store's own snapshot (with its own limits, which
 * still decide what is stored) takes each message as is instead of copying it again.
 */
const ENGINE_DATA: SnapshotLimits = Object.freeze({
  maxDepth: Number.MAX_SAFE_INTEGER,
  maxNodes: Number.MAX_SAFE_INTEGER,
  maxStringBytes: Number.MAX_SAFE_INTEGER,
  maxTotalBytes: Number.MAX_SAFE_INTEGER,
});

/** A frozen, certified copy of a message the engine built (see `ENGINE_DATA`). */
export function engineMessage(message: Msg): Msg {
  return snapshot(message as unknown as JsonValue, ENGINE_DATA) as unknown as Msg;
}

/**
 * The turn's messages, versioned: each appended message is frozen and advances `revision` by one,
 * and every snapshot handed out is the frozen message list. `added` is what the turn records (the
 * session batch); the view requests are built from is the session view then the turn's messages,
 * or after a rotation the summary, the kept tail and the turn's messages.
 */
export class MessageLog {
  readonly added: Msg[] = [];
  revision: number;
  /** The view the turn's requests start from: the session's, or the rotated one. */
  #history: readonly Msg[];
  /** Leading messages of `added` that `#history` already shows (the rotation's own records). */
  #shown = 0;
  /** The turn rotated its context (cold or reactive): it rotates at most once. */
  rotated = false;

  constructor(
    readonly turnId: string,
    history: readonly Msg[],
    /** The session view's revision the turn started from. */
    readonly baseRevision: number,
    private readonly emit: (event: LoopEvent) => void,
    private readonly now: () => number,
  ) {
    this.#history = history;
    this.revision = baseRevision;
  }

  /** The view before this turn's own messages: the session's, or after a rotation the summary and the kept tail. */
  get history(): readonly Msg[] {
    return this.#history;
  }

  /** Records a message, stamped with the turn's id and the time (`meta.turn`, `meta.at`). */
  append(role: "user" | "assistant", blocks: readonly Block[], meta?: MsgMeta): Msg {
    const message = engineMessage({
      role,
      blocks,
      meta: { ...meta, turn: this.turnId, at: this.now() },
    });
    this.added.push(message);
    this.revision += 1;
    this.emit({ type: "message.completed", turnId: this.turnId, role, revision: this.revision });
    return message;
  }

  /**
   * Rotates once: `view` (the summary and the tail as the model reads them) replaces the history,
   * and `records` (the summary marker and the tail re-recorded) go first in the turn's batch, so
   * the stored view starts at the marker and continues with the tail and this turn's messages.
   */
  rotate(view: readonly Msg[], records: readonly Msg[]): void {
    this.#history = Object.freeze([...view]);
    this.added.unshift(...records);
    this.#shown = records.length;
    this.rotated = true;
    for (const m of records) {
      this.revision += 1;
      this.emit({
        type: "message.completed",
        turnId: this.turnId,
        role: m.role,
        revision: this.revision,
      });
    }
  }

  /**
   * Takes back what the turn recorded before it parked (its continuation's messages): after a
   * rotation, the view is the marker and the kept tail of the same history, as when it rotated.
   */
  restore(added: readonly Msg[], rotated: boolean): void {
    this.added.push(...added);
    this.revision = this.baseRevision + added.length;
    if (!rotated) return;
    const marker = added[0];
    const replaces = marker?.meta?.rotation?.replaces;
    if (marker === undefined || replaces === undefined)
      throw new Error("a rotated continuation starts with its marker: a broken invariant");
    this.#history = Object.freeze([marker, ...this.#history.slice(replaces)]);
    // The rotation's records (the marker, the tail re-recorded) are what the new view shows.
    this.#shown = this.#history.length;
    this.rotated = true;
  }

  /** Forgets everything the turn recorded: a released refusal leaves no message of the turn. */
  discard(): void {
    this.added.length = 0;
    this.#shown = 0;
    this.revision = this.baseRevision;
  }

  /** The frozen view a request is built from: the (possibly rotated) history then this turn's messages. */
  view(): readonly Msg[] {
    const own = this.#shown === 0 ? this.added : this.added.slice(this.#shown);
    return Object.freeze([...this.#history, ...own]);
  }
}

/**
 * One turn's mutable facts: its message log, and the counters the limits, budgets and trails read.
 * Money is not here: the turn's `TurnAccount` is the governed call's, read-only to the loop.
 */
export class TurnState {
  readonly log: MessageLog;
  /** Main steps started. */
  steps = 0;
  /** Model calls reserved against `maxCalls` (main and children); a refused call gives its slot back. */
  callsUsed = 0;
  /** Operation numbers handed out, so concurrent children never share an operation id. */
  operations = 0;
  requestedToolCalls = 0;
  /** Cumulative reported tokens (prompt, cache and completion) of every call of the turn. */
  modelTokens = 0;
  usage: Usage = ZERO_USAGE;
  readonly callIds = new Set<string>();
  readonly toolCalls: TurnToolCall[] = [];
  readonly warned = new Set<string>();
  readonly warnings: string[] = [];
  /** Run-scoped permission grants from allowed asks, keyed by action and subject. */
  readonly grants = new Set<string>();
  webSearches = 0;
  /** Every failed call attempt, in order (spec: call-retry). */
  readonly failures: TurnCallFailure[] = [];
  /** This turn's resolved media bytes by ref, for requests only; never recorded (spec: media-by-bytes). */
  media: ReadonlyMap<string, ResolvedMedia> = new Map();

  constructor(
    readonly turnId: string,
    history: readonly Msg[],
    baseRevision: number,
    emit: (event: LoopEvent) => void,
    now: () => number,
    /** The turn's money, moved only by the governed call. */
    readonly account: TurnAccount,
  ) {
    this.log = new MessageLog(turnId, history, baseRevision, emit, now);
  }

  addUsage(usage: Usage): void {
    this.usage = addUsage(this.usage, usage);
    this.modelTokens += totalTokens(usage);
  }

  get receipts(): readonly CostReceipt[] {
    return this.account.receipts;
  }

  /** Takes back the counters and records of a parked turn (the account is opened from its money). */
  restore(c: Continuation): void {
    this.log.restore(
      c.messages.map((m) => m.message),
      c.rotated,
    );
    this.steps = c.step;
    ({
      callsUsed: this.callsUsed,
      operations: this.operations,
      requestedToolCalls: this.requestedToolCalls,
      modelTokens: this.modelTokens,
      webSearches: this.webSearches,
    } = c.counters);
    for (const r of c.reservations.receipts) this.usage = addUsage(this.usage, r.usage);
    for (const id of c.callIds) this.callIds.add(id);
    this.toolCalls.push(...c.toolCalls);
    for (const w of c.warned) this.warned.add(w);
    this.warnings.push(...c.warnings);
    for (const g of c.grants) this.grants.add(g);
    this.failures.push(...c.failures);
  }
}
