export type { CollectedItem, ModelJobCollection } from "./collect.js";
export {
  ModelJobClient,
  type ModelJobClientConfig,
  type ModelJobSubmission,
  type ModelJobUncertainCause,
} from "./client.js";
export { MixedTenantJobError } from "./errors.js";
export type { ModelJobInput, ModelJobItemInput } from "./input.js";
