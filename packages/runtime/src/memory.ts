import type { ConversationStores } from "@alma-harness/conversation";
import {
  InMemoryAdmissionStore,
  InMemoryAuditLog,
  InMemoryCostSettlementStore,
  InMemoryExecutionResultStore,
  InMemoryExecutionStore,
  InMemorySessionLabelStore,
  InMemorySessionStore,
  InMemorySpendStore,
} from "@alma-harness/core/memory";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** Fresh in-memory stores: the reference implementations, volatile, for tests and demos. */
export function memoryStores(): ConversationStores & { readonly audit: InMemoryAuditLog } {
  const admissions = new InMemoryAdmissionStore();
  const spend = new InMemorySpendStore();
  return {
    admissions,
    sessions: new InMemorySessionStore(admissions),
    results: new InMemoryExecutionResultStore(),
    rootResults: new InMemoryExecutionResultStore({ admissions }),
    journal: new InMemoryExecutionStore({ admissions, spend }),
    settlements: new InMemoryCostSettlementStore({ spend }),
    spend,
    labels: new InMemorySessionLabelStore(),
    audit: new InMemoryAuditLog(),
  };
}

/** A runner on in-memory stores. */
export function memory(config: RuntimeConfig): Runtime & { readonly stores: ReturnType<typeof memoryStores> } {
  const stores = memoryStores();
  return { ...compose(config, stores, async () => undefined), stores };
}
