import type { EpisodeStore, ProfileStore, RecallQuery, RecallResult, RecallSource } from "@alma-harness/core";

/** Recall from the memory stores: each store's own lexical search, at or below the query's ceiling. */
export function storeRecall(stores: { readonly episodes: EpisodeStore; readonly profiles: ProfileStore }, name = "memory"): RecallSource {
  return {
    name,
    async recall(query: RecallQuery): Promise<RecallResult> {
      const search = (limit: number) => ({ text: query.text, ceiling: query.ceiling, limit });
      const [episodes, facts] = await Promise.all([
        query.limits.episodes > 0 ? stores.episodes.search(query.scope, search(query.limits.episodes)) : [],
        query.limits.facts > 0 ? stores.profiles.search(query.scope, search(query.limits.facts)) : [],
      ]);
      return Object.freeze({ episodes: Object.freeze(episodes.map((h) => h.record)), facts: Object.freeze(facts.map((h) => h.record)) });
    },
  };
}
