// The in-memory memory stores (seed 001: "the in-memory memory stores in @alma-harness/memory/testing").
export { InMemoryEpisodeStore, InMemoryProfileStore, inMemoryMemoryStores, type MemoryStores } from "./stores.js";
