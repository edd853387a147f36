export { compose, type Runtime, type RuntimeConfig } from "./compose.js";
export { memory, memoryStores } from "./memory.js";
