// @alma-harness/memory: the pure context helpers (also at `@alma-harness/memory/context`), and the
// memory layer over core's contracts (EpisodeStore, ProfileStore, MemoryErasure, RecallSource).
export * from "./context/index.js";
export { storeRecall } from "./recall-source.js";
export {
  cosine,
  embeddingRequest,
  type SemanticRanking,
  type SemanticRecallOptions,
  semanticRecall,
} from "./semantic-recall.js";
export {
  coverMemory,
  createMemoryErasure,
  type MemoryErasureOptions,
  type MemoryErasureOutcome,
  type MemoryHostErasure,
} from "./erasure.js";
export type { MemoryStores } from "./in-memory.js";
