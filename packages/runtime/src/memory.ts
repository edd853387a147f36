import { resolveTrailKey, type TrailKey, type TrailKeyMaterial } from "@alma-harness/core";
import {
  type InMemoryAuditLog,
  type InMemoryStores,
  inMemoryStores,
} from "@alma-harness/core/memory";
import { coverMemory } from "@alma-harness/memory";
import {
  type InMemoryEpisodeStore,
  type InMemoryProfileStore,
  inMemoryMemoryStores,
} from "@alma-harness/memory/in-memory";
import { compose, type Runtime, type RuntimeConfig, type RuntimeStores } from "./compose.js";

/** The in-memory set: core's stores and the memory stores, the erasure covering both. */
export type MemoryRuntimeStores = RuntimeStores &
  Omit<InMemoryStores, "erasure"> & {
    readonly audit: InMemoryAuditLog;
    readonly episodes: InMemoryEpisodeStore;
    readonly profiles: InMemoryProfileStore;
  };

/** Fresh in-memory stores: the reference implementations, linked as one set, volatile, for tests and demos. */
export function memoryStores(trailKey?: TrailKey | TrailKeyMaterial): MemoryRuntimeStores {
  const stores = inMemoryStores(trailKey === undefined ? {} : { trailKey });
  // A record learned from a session the set erased is refused (the session store keeps its tombstone).
  const memory = inMemoryMemoryStores({
    erased: async (scope, sessionId) =>
      (await stores.sessions.load(scope, sessionId)).erased === true,
  });
  return {
    ...stores,
    episodes: memory.episodes,
    profiles: memory.profiles,
    memoryErasure: memory.erasure,
    erasure: coverMemory(stores.erasure, memory.erasure),
  };
}

/** A runner on in-memory stores. */
export function memory(config: RuntimeConfig): Runtime & { readonly stores: MemoryRuntimeStores } {
  // One key for the trails and the erased sessions' marks (the per-process one when none is given).
  const key = resolveTrailKey(config.trailKey);
  const stores = memoryStores(key);
  return { ...compose({ ...config, trailKey: key }, stores, async () => undefined), stores };
}
