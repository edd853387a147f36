import type { Sensitivity } from "../routing.js";
import type { Scope } from "../scope.js";

/**
 * The memory contracts (seed 001: the interfaces live in core because memory integrates with
 * tenancy, audit and routing; the implementations live in `@alma-harness/memory`).
 *
 * Two records, both scoped and both carrying a sensitivity:
 * - an **episode**: what happened in one session (a bounded summary, its time, its sensitivity);
 * - a **profile fact**: a durable fact about the person, with its source turn, the sensitivity of
 *   what it was learned from and a confidence. A fact has a `key` (a slot such as
 *   `allergy.penicillin`): a newer fact under the same key supersedes the older one for recall.
 *
 * The rule every store keeps: a search returns records of the asked scope only, at or below the
 * asked `ceiling` (by `sensitivityRank`), never another scope's, never above the ceiling.
 */

/** Where a memory record came from: the turn whose completion (or rotation) extracted it. */
export interface MemorySource {
  readonly sessionId: string;
  readonly turnId: string;
  /** Epoch ms of the source turn. */
  readonly at: number;
}

export interface Episode {
  readonly scope: Scope;
  /** 1–128 id characters; unique per scope. */
  readonly episodeId: string;
  readonly source: MemorySource;
  readonly sensitivity: Sensitivity;
  /** The summary (1 B–4 KiB of UTF-8), product-side lines labelled as the rotation summary does. */
  readonly summary: string;
  /** The turn's reply was never delivered to the person (the summary says so too). */
  readonly undelivered?: true;
}

export interface ProfileFact {
  readonly scope: Scope;
  /** 1–128 id characters; unique per scope. */
  readonly factId: string;
  /** The slot: `^[a-z][a-z0-9_.-]{0,63}$`. A newer fact (by `source.at`, then `factId`) under one key supersedes. */
  readonly key: string;
  /** The fact (1 B–1 KiB of UTF-8). */
  readonly text: string;
  readonly source: MemorySource;
  /** The sensitivity of what it was learned from; never recalled into a turn below it. */
  readonly sensitivity: Sensitivity;
  /** 0..1. */
  readonly confidence: number;
}

/** What a `put` did: `stored` a new record, or `replayed` an equal one (a different one under a used id is a conflict). */
export type MemoryPutStatus = "stored" | "replayed";

/** A lexical search of one scope's records at or below a ceiling. */
export interface MemorySearch {
  /** The words to rank by (1 B–4 KiB); an empty-after-tokenizing query ranks by recency. */
  readonly text: string;
  /** The highest sensitivity a returned record may have. */
  readonly ceiling: Sensitivity;
  /** 1–50. */
  readonly limit: number;
}

/** One search hit: the record and its rank score (higher is better; comparable within one result only). */
export interface MemoryHit<T> {
  readonly record: T;
  readonly score: number;
}

export interface MemoryListQuery {
  readonly sessionId?: string;
  readonly cursor?: string;
  /** 1–100, default 50. */
  readonly limit?: number;
}

export interface MemoryPage<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string;
}

/**
 * Guarantees of both stores (`memoryContract` in @alma-harness/testing checks each):
 * - every argument is validated before any I/O by core's normalizers (`normalize-memory.ts`): bad
 *   input is a typed `ValidationError`, `InvalidScopeError` or `InvalidIdError` naming the rule,
 *   never the value;
 * - `put` stores once per `(scope, id)`: an equal record again is `replayed`, a different one throws
 *   `MemoryConflictError` (code `memory_conflict`); concurrent equal puts store one; a record whose
 *   source session the store set erased (`SessionErasure`) throws `ErasedError`;
 * - `search` ranks with the backend's own full-text search over core's `memoryTerms` only (no
 *   character of the query is query syntax), returns the asked scope only, at or below the ceiling,
 *   facts superseded by a newer fact of their key never (even when the newer one is above the
 *   ceiling), at most `limit`, ties newest first; a query with no word ranks by recency;
 * - `list` pages every record of the scope newest first by `(source.at, id)` with an opaque cursor;
 * - records returned are frozen.
 */
export interface EpisodeStore {
  put(episode: Episode): Promise<MemoryPutStatus>;
  search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<Episode>[]>;
  list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<Episode>>;
}

export interface ProfileStore {
  /** Stores a fact; recall then sees only the newest fact of each key. */
  put(fact: ProfileFact): Promise<MemoryPutStatus>;
  /** Current facts only (the newest of each key), ranked. */
  search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<ProfileFact>[]>;
  /** Every stored fact (superseded ones too), newest first, for the operator. */
  list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<ProfileFact>>;
  /** Removes one fact (the operator's "forget this"); true when it existed. */
  remove(scope: Scope, factId: string): Promise<boolean>;
}

/** One erasure of memory: a session's records (episodes from it, facts learned in it) or the whole scope's. */
export interface MemoryErasureTarget {
  readonly scope: Scope;
  readonly sessionId?: string;
}

export interface MemoryErasureReport {
  readonly episodes: number;
  readonly facts: number;
}

/** The memory side of an erasure; `createMemoryErasure` composes it with sessions, labels and both result namespaces. */
export interface MemoryErasure {
  eraseMemory(target: MemoryErasureTarget): Promise<MemoryErasureReport>;
}

/** What recall asks for, before a turn's first step. */
export interface RecallQuery {
  readonly scope: Scope;
  readonly sessionId: string;
  /** The turn's input text: the words recall ranks by. */
  readonly text: string;
  /** The turn's sensitivity (a delegate's ceiling when lower): nothing above it is recalled. */
  readonly ceiling: Sensitivity;
  /** Bounds: 0–50 each. */
  readonly limits: { readonly episodes: number; readonly facts: number };
  readonly signal: AbortSignal;
}

export interface RecallResult {
  readonly episodes: readonly Episode[];
  readonly facts: readonly ProfileFact[];
}

/** Where recall reads from: the memory stores (`storeRecall`), or a host's own (an embedding index). */
export interface RecallSource {
  /** A short content-free name for the recall trail (`[a-z0-9_.:-]`, ≤ 64). */
  readonly name: string;
  recall(query: RecallQuery): Promise<RecallResult>;
}
