// The in-memory memory stores (seed 001: "the in-memory memory stores in @alma-harness/memory/testing"),
// re-exported from `@alma-harness/memory/in-memory`, which production compositions import.
export {
  type ErasedSessionCheck,
  InMemoryEpisodeStore,
  InMemoryProfileStore,
  inMemoryMemoryStores,
  type MemoryStores,
} from "../in-memory.js";
export { ConceptEmbedding, DEFAULT_CONCEPTS } from "./embedding.js";
