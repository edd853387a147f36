import type { ConversationStores } from "@alma-harness/conversation";
import { resolveTrailKey, type TrailKey, type TrailKeyMaterial } from "@alma-harness/core";
import { type InMemoryAuditLog, inMemoryStores } from "@alma-harness/core/memory";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** Fresh in-memory stores: the reference implementations, linked as one set, volatile, for tests and demos. */
export function memoryStores(trailKey?: TrailKey | TrailKeyMaterial): ConversationStores & { readonly audit: InMemoryAuditLog } {
  return inMemoryStores(trailKey === undefined ? {} : { trailKey });
}

/** A runner on in-memory stores. */
export function memory(config: RuntimeConfig): Runtime & { readonly stores: ReturnType<typeof memoryStores> } {
  // One key for the trails and the erased sessions' marks (the per-process one when none is given).
  const key = resolveTrailKey(config.trailKey);
  const stores = memoryStores(key);
  return { ...compose({ ...config, trailKey: key }, stores, async () => undefined), stores };
}
