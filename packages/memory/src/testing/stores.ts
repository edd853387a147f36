import {
  type Episode,
  type EpisodeStore,
  type MemoryErasure,
  type MemoryErasureReport,
  type MemoryErasureTarget,
  type MemoryHit,
  type MemoryListQuery,
  type MemoryPage,
  type MemoryPutStatus,
  type MemorySearch,
  type ProfileFact,
  type ProfileStore,
  type Scope,
  sensitivityRank,
} from "@alma-harness/core";
import { canonicalJson } from "@alma-harness/core";
import { scopeKey } from "@alma-harness/core/stores";
import { lexicalScore, tokenize } from "../lexical.js";

/** The memory stores of one deployment, and the memory side of its erasure. */
export interface MemoryStores {
  readonly episodes: EpisodeStore;
  readonly profiles: ProfileStore;
  readonly erasure: MemoryErasure;
}

const freezeCopy = <T>(value: T): T => Object.freeze(JSON.parse(JSON.stringify(value))) as T;

/** Records by `scopeKey id`, in insertion order. */
class Records<T extends { readonly scope: Scope }> {
  readonly rows = new Map<string, T>();
  put(id: string, record: T): MemoryPutStatus {
    const key = `${scopeKey(record.scope).key} ${id}`;
    const known = this.rows.get(key);
    if (known !== undefined) {
      if (canonicalJson(known as never) === canonicalJson(record as never)) return "replayed";
      throw new Error(`memory record "${id}" exists with other content`);
    }
    this.rows.set(key, freezeCopy(record));
    return "stored";
  }
  of(scope: Scope): T[] {
    const { key } = scopeKey(scope);
    return [...this.rows.values()].filter((r) => scopeKey(r.scope).key === key);
  }
  remove(predicate: (record: T) => boolean): number {
    let n = 0;
    for (const [key, record] of this.rows) {
      if (predicate(record)) {
        this.rows.delete(key);
        n++;
      }
    }
    return n;
  }
}

function ranked<T>(records: readonly T[], text: (r: T) => string, at: (r: T) => number, query: MemorySearch): MemoryHit<T>[] {
  const terms = tokenize(query.text);
  const hits = records
    .map((record) => ({ record, score: terms.length === 0 ? 0 : lexicalScore(terms, text(record)) }))
    .filter((h) => terms.length === 0 || h.score > 0);
  hits.sort((a, b) => b.score - a.score || at(b.record) - at(a.record));
  return hits.slice(0, query.limit).map((h) => Object.freeze(h));
}

const within = (ceiling: MemorySearch["ceiling"]) => (r: { readonly sensitivity: MemorySearch["ceiling"] }) =>
  sensitivityRank(r.sensitivity) <= sensitivityRank(ceiling);

function page<T>(items: readonly T[], query: MemoryListQuery | undefined): MemoryPage<T> {
  const start = query?.cursor === undefined ? 0 : Number(query.cursor);
  const limit = query?.limit ?? 50;
  const slice = items.slice(start, start + limit);
  return Object.freeze({ items: Object.freeze(slice), ...(start + limit < items.length ? { nextCursor: String(start + limit) } : {}) });
}

export class InMemoryEpisodeStore implements EpisodeStore {
  readonly records = new Records<Episode>();
  async put(episode: Episode): Promise<MemoryPutStatus> {
    return this.records.put(episode.episodeId, episode);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<Episode>[]> {
    return ranked(this.records.of(scope).filter(within(query.ceiling)), (e) => e.summary, (e) => e.source.at, query);
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<Episode>> {
    const rows = this.records.of(scope).filter((e) => query?.sessionId === undefined || e.source.sessionId === query.sessionId);
    return page(rows.sort((a, b) => b.source.at - a.source.at), query);
  }
}

/** Whether `a` is newer than `b` under one key (by source time, then fact id). */
const newer = (a: ProfileFact, b: ProfileFact) => a.source.at > b.source.at || (a.source.at === b.source.at && a.factId > b.factId);

export class InMemoryProfileStore implements ProfileStore {
  readonly records = new Records<ProfileFact>();
  async put(fact: ProfileFact): Promise<MemoryPutStatus> {
    return this.records.put(fact.factId, fact);
  }
  async search(scope: Scope, query: MemorySearch): Promise<readonly MemoryHit<ProfileFact>[]> {
    const current = new Map<string, ProfileFact>();
    for (const fact of this.records.of(scope)) {
      const known = current.get(fact.key);
      if (known === undefined || newer(fact, known)) current.set(fact.key, fact);
    }
    return ranked([...current.values()].filter(within(query.ceiling)), (f) => `${f.key.replace(/[._-]/g, " ")} ${f.text}`, (f) => f.source.at, query);
  }
  async list(scope: Scope, query?: MemoryListQuery): Promise<MemoryPage<ProfileFact>> {
    const rows = this.records.of(scope).filter((f) => query?.sessionId === undefined || f.source.sessionId === query.sessionId);
    return page(rows.sort((a, b) => (newer(a, b) ? -1 : 1)), query);
  }
  async remove(scope: Scope, factId: string): Promise<boolean> {
    const { key } = scopeKey(scope);
    return this.records.remove((f) => scopeKey(f.scope).key === key && f.factId === factId) > 0;
  }
}

/** A memory store set on the reference stores, with the memory side of erasure. */
export function inMemoryMemoryStores(): MemoryStores & { readonly episodes: InMemoryEpisodeStore; readonly profiles: InMemoryProfileStore } {
  const episodes = new InMemoryEpisodeStore();
  const profiles = new InMemoryProfileStore();
  const erasure: MemoryErasure = {
    async eraseMemory(target: MemoryErasureTarget): Promise<MemoryErasureReport> {
      const { key } = scopeKey(target.scope);
      const hit = (r: Episode | ProfileFact) => scopeKey(r.scope).key === key && (target.sessionId === undefined || r.source.sessionId === target.sessionId);
      return Object.freeze({ episodes: episodes.records.remove(hit), facts: profiles.records.remove(hit) });
    },
  };
  return { episodes, profiles, erasure };
}
