import {
  type Episode,
  type EpisodeStore,
  ErasedError,
  MemoryConflictError,
  type MemoryErasure,
  type MemoryErasureReport,
  type MemoryErasureTarget,
  type MemoryHit,
  type MemoryListQuery,
  type MemoryPage,
  type MemoryPutStatus,
  type MemorySearch,
  memoryListCursor,
  memoryListKey,
  memoryNewer,
  type NormalizedMemorySearch,
  normalizeEpisode,
  normalizeFactRef,
  normalizeMemoryList,
  normalizeMemorySearch,
  normalizeMemoryTarget,
  normalizeProfileFact,
  type ProfileFact,
  type ProfileStore,
  type Scope,
  sensitivityRank,
} from "@alma-harness/core";
import { MEMORY_STATE } from "@alma-harness/core/memory";
import { sameJson } from "@alma-harness/core/stores";
import { lexicalScore } from "./lexical.js";

/**
 * The in-memory memory stores: the reference the SQL stores are held to by the shared contract
 * suite (`memoryContract` in @alma-harness/testing). Volatile; every call validates with core's
 * normalizers before it touches a row, and each call's effect is one synchronous step (no other
 * call interleaves), so concurrent equal puts store one.
 */

/** The memory stores of one deployment, and the memory side of its erasure. */
export interface MemoryStores {
  readonly episodes: EpisodeStore;
  readonly profiles: ProfileStore;
  readonly erasure: MemoryErasure;
}

type MemoryRecord = Episode | ProfileFact;
const idOf = (r: MemoryRecord) => ("episodeId" in r ? r.episodeId : r.factId);

/** Records by scope key, then by id. */
class Records<T extends MemoryRecord> {
  readonly #rows = new Map<string, Map<string, T>>();
  readonly #kind: "episode" | "fact";
  constructor(kind: "episode" | "fact") {
    this.#kind = kind;
  }
  put(key: string, record: T): MemoryPutStatus {
    let scope = this.#rows.get(key);
    const known = scope?.get(idOf(record));
    if (known !== undefined) {
      if (sameJson(known, record)) return "replayed";
      throw new MemoryConflictError(this.#kind);
    }
    if (scope === undefined) {
      scope = new Map();
      this.#rows.set(key, scope);
    }
    scope.set(idOf(record), record);
    return "stored";
  }
  of(key: string): T[] {
    return [...(this.#rows.get(key)?.values() ?? [])];
  }
  remove(key: string, predicate: (record: T) => boolean): number {
    const scope = this.#rows.get(key);
    if (scope === undefined) return 0;
    let n = 0;
    for (const [id, record] of scope) {
      if (predicate(record)) {
        scope.delete(id);
        n++;
      }
    }
    if (scope.size === 0) this.#rows.delete(key);
    return n;
  }
  /** The rows as they are, for the erasure contract's deep scan (nothing in the stores reads it). */
  [MEMORY_STATE](): unknown {
    return this.#rows;
  }
}

/** Newest first by `(source.at, id)`. */
const byNewest = (a: MemoryRecord, b: MemoryRecord) =>
  memoryNewer(memoryListKey(a), memoryListKey(b)) ? -1 : 1;

function ranked<T extends MemoryRecord>(
  records: readonly T[],
  text: (r: T) => string,
  q: NormalizedMemorySearch,
): MemoryHit<T>[] {
  const hits = records
    .filter((r) => sensitivityRank(r.sensitivity) <= q.ceilingRank)
    .map((record) => ({
      record,
      score: q.terms.length === 0 ? 0 : lexicalScore(q.terms, text(record)),
    }))
    .filter((h) => q.terms.length === 0 || h.score > 0);
  hits.sort((a, b) => b.score - a.score || byNewest(a.record, b.record));
  return hits.slice(0, q.limit).map((h) => Object.freeze(h));
}

function page<T extends MemoryRecord>(
  rows: readonly T[],
  scope: Scope,
  query: MemoryListQuery | undefined,
): MemoryPage<T> {
  const q = normalizeMemoryList(scope, query);
  const before = q.before;
  const rest = rows
    .filter((r) => q.sessionId === undefined || r.source.sessionId === q.sessionId)
    .filter((r) => before === undefined || memoryNewer(before, memoryListKey(r)))
    .sort(byNewest);
  const items = Object.freeze(rest.slice(0, q.limit));
  const last = items[items.length - 1];
  return Object.freeze({
    items,
    ...(rest.length > q.limit && last !== undefined ? { nextCursor: memoryListCursor(last) } : {}),
  });
}

/** Whether the store set erased a session (its tombstone): a record learned from it is refused. */
export type ErasedSessionCheck = (scope: Scope, sessionId: string) => boolean | Promise<boolean>;

async function refuseErased(
  erased: ErasedSessionCheck | undefined,
  record: MemoryRecord,
): Promise<void> {
  if (erased !== undefined && (await erased(record.scope, record.source.sessionId)))
    throw new ErasedError("the record's source session");
}

export class InMemoryEpisodeStore implements EpisodeStore {
  readonly records = new Records<Episode>("episode");
  readonly #erased: ErasedSessionCheck | undefined;
  constructor(erased?: ErasedSessionCheck) {
    this.#erased = erased;
  }
  async put(input: Episode): Promise<MemoryPutStatus> {
    const { episode, key } = normalizeEpisode(input);
    await refuseErased(this.#erased, episode);
    return this.records.put(key, episode);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<Episode>[]> {
    const q = normalizeMemorySearch(scope, query);
    return Object.freeze(ranked(this.records.of(q.key), (e) => e.summary, q));
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<Episode>> {
    return page(this.records.of(normalizeMemoryList(scope, query).key), scope, query);
  }
}

export class InMemoryProfileStore implements ProfileStore {
  readonly records = new Records<ProfileFact>("fact");
  readonly #erased: ErasedSessionCheck | undefined;
  constructor(erased?: ErasedSessionCheck) {
    this.#erased = erased;
  }
  async put(input: ProfileFact): Promise<MemoryPutStatus> {
    const { fact, key } = normalizeProfileFact(input);
    await refuseErased(this.#erased, fact);
    return this.records.put(key, fact);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<ProfileFact>[]> {
    const q = normalizeMemorySearch(scope, query);
    // Supersession before the ceiling: a fact whose key has a newer fact is never recalled, even when the newer one is above the ceiling.
    const current = new Map<string, ProfileFact>();
    for (const fact of this.records.of(q.key)) {
      const known = current.get(fact.key);
      if (known === undefined || memoryNewer(memoryListKey(fact), memoryListKey(known)))
        current.set(fact.key, fact);
    }
    return Object.freeze(
      ranked([...current.values()], (f) => `${f.key.replace(/[._-]/g, " ")} ${f.text}`, q),
    );
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<ProfileFact>> {
    return page(this.records.of(normalizeMemoryList(scope, query).key), scope, query);
  }
  async remove(scope: Scope, factId: string): Promise<boolean> {
    const ref = normalizeFactRef(scope, factId);
    return this.records.remove(ref.key, (f) => f.factId === ref.factId) > 0;
  }
}

/**
 * A memory store set on the reference stores, with the memory side of erasure. `erased`: how the
 * linked store set tells an erased session (the runtime passes its session store's tombstone), so
 * a put learned from one is refused with `ErasedError`, as in SQLite and PostgreSQL; absent, no
 * session is erased as far as these stores know.
 */
export function inMemoryMemoryStores(
  opts: { readonly erased?: ErasedSessionCheck } = {},
): MemoryStores & {
  readonly episodes: InMemoryEpisodeStore;
  readonly profiles: InMemoryProfileStore;
} {
  const episodes = new InMemoryEpisodeStore(opts.erased);
  const profiles = new InMemoryProfileStore(opts.erased);
  const erasure: MemoryErasure = {
    async eraseMemory(input: MemoryErasureTarget): Promise<MemoryErasureReport> {
      const target = normalizeMemoryTarget(input);
      const hit = (r: MemoryRecord) =>
        target.sessionId === undefined || r.source.sessionId === target.sessionId;
      return Object.freeze({
        episodes: episodes.records.remove(target.key, hit),
        facts: profiles.records.remove(target.key, hit),
      });
    },
  };
  return { episodes, profiles, erasure };
}
