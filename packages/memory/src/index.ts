// @alma-harness/memory. Today: the pure context helpers (also at `@alma-harness/memory/context`).
// Episodes, profiles, recall and memory erasure (issue 18) are not built yet.
export * from "./context/index.js";
