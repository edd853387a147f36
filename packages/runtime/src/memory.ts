import type { ConversationStores } from "@alma-harness/conversation";
import {
  InMemoryAdmissionStore,
  InMemoryCostSettlementStore,
  InMemoryExecutionResultStore,
  InMemoryExecutionStore,
  InMemorySessionLabelStore,
  InMemorySessionStore,
  InMemorySpendStore,
  RecordingAuditLog,
} from "@alma-harness/core/testing";
import { compose, type Runtime, type RuntimeConfig } from "./compose.js";

/** Fresh in-memory stores: the reference implementations, volatile, for tests and demos. */
export function memoryStores(): ConversationStores & { readonly audit: RecordingAuditLog } {
  const admissions = new InMemoryAdmissionStore();
  const spend = new InMemorySpendStore();
  return {
    admissions,
    sessions: new InMemorySessionStore(admissions),
    results: new InMemoryExecutionResultStore(),
    rootResults: new InMemoryExecutionResultStore(),
    journal: new InMemoryExecutionStore(),
    settlements: new InMemoryCostSettlementStore({ spend }),
    spend,
    labels: new InMemorySessionLabelStore(),
    audit: new RecordingAuditLog(),
  };
}

/** A runner on in-memory stores. */
export function memory(config: RuntimeConfig): Runtime & { readonly stores: ReturnType<typeof memoryStores> } {
  const stores = memoryStores();
  return { ...compose(config, stores, async () => undefined), stores };
}
