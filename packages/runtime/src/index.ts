export { compose, type Runtime, type RuntimeConfig } from "./compose.js";
export { memory, memoryStores } from "./memory.js";
export { postgres } from "./postgres.js";
export { sqlite } from "./sqlite.js";
export { TRAIL_KEY_FILE } from "./trail-key.js";
export { stepRunnerOf } from "./steps.js";
