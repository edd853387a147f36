import type { ConversationStores } from "@alma-harness/conversation";
import { type InMemoryAuditLog, inMemoryStores } from "@alma-harness/core/memory";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** Fresh in-memory stores: the reference implementations, linked as one set, volatile, for tests and demos. */
export function memoryStores(): ConversationStores & { readonly audit: InMemoryAuditLog } {
  return inMemoryStores();
}

/** A runner on in-memory stores. */
export function memory(config: RuntimeConfig): Runtime & { readonly stores: ReturnType<typeof memoryStores> } {
  const stores = memoryStores();
  return { ...compose(config, stores, async () => undefined), stores };
}
