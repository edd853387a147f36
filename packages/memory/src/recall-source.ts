import type {
  EpisodeStore,
  MemoryHit,
  MemorySearch,
  ProfileFact,
  ProfileStore,
  RecallQuery,
  RecallResult,
  RecallSource,
  Scope,
} from "@alma-harness/core";

/** A query with no word ranks by recency in every store (the normalizer needs one byte: a space has no word). */
const RECENT = " ";

/**
 * Recall from the memory stores: each store's own lexical search, at or below the query's ceiling.
 * Facts are topped up by recency to the bound when the words found fewer (a person has few facts,
 * and one asked in other words — "allergies" for "allergy" — must not be lost to the ranking);
 * episodes are recalled by their words only.
 */
export function storeRecall(
  stores: { readonly episodes: EpisodeStore; readonly profiles: ProfileStore },
  name = "memory",
): RecallSource {
  return {
    name,
    async recall(query: RecallQuery): Promise<RecallResult> {
      const text = query.text.trim() === "" ? RECENT : query.text;
      const search = (limit: number, words = text): MemorySearch => ({
        text: words,
        ceiling: query.ceiling,
        limit,
      });
      const [episodes, facts] = await Promise.all([
        query.limits.episodes > 0
          ? stores.episodes.search(query.scope, search(query.limits.episodes))
          : [],
        query.limits.facts > 0
          ? factsFor(
              stores.profiles,
              query.scope,
              search(query.limits.facts),
              search(query.limits.facts, RECENT),
            )
          : [],
      ]);
      return Object.freeze({
        episodes: Object.freeze(episodes.map((h) => h.record)),
        facts: Object.freeze(facts),
      });
    },
  };
}

async function factsFor(
  profiles: ProfileStore,
  scope: Scope,
  byWords: MemorySearch,
  byRecency: MemorySearch,
): Promise<ProfileFact[]> {
  const found: readonly MemoryHit<ProfileFact>[] = await profiles.search(scope, byWords);
  const out = found.map((h) => h.record);
  if (out.length >= byWords.limit || byWords.text === RECENT) return out;
  const seen = new Set(out.map((f) => f.factId));
  for (const hit of await profiles.search(scope, byRecency)) {
    if (out.length >= byWords.limit) break;
    if (!seen.has(hit.record.factId)) out.push(hit.record);
  }
  return out;
}
