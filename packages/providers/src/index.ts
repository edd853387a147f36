/**
 * @alma-harness/providers — provider adapters over `fetch` and a real SSE parser, each a core
 * `ModelClient` (with the single-dispatch evidence face), plus versioned price tables as data.
 */
export {
  type AnthropicClientOptions,
  classifyAnthropic,
  createAnthropicClient,
  DEFAULT_ANTHROPIC_BASE_URL,
} from "./anthropic/client.js";
export { type AnthropicModelTraits, defaultAnthropicTraits } from "./anthropic/models.js";
export { DEFAULT_WEB_SEARCH_TOOL as ANTHROPIC_WEB_SEARCH_TOOL } from "./anthropic/tools.js";
export {
  createOpenAIChatClient,
  DEFAULT_OPENAI_BASE_URL,
  defaultReasoningModel,
  type OpenAIClientOptions,
} from "./openai-chat/client.js";
export {
  createOpenAIResponsesClient,
  type OpenAIResponsesClientOptions,
} from "./openai-responses/client.js";
export {
  createOpenRouterClient,
  DEFAULT_OPENROUTER_BASE_URL,
  type OpenRouterClientOptions,
} from "./openrouter/client.js";
export {
  type OpenRouterCall,
  type OpenRouterProviderPreferences,
  type OpenRouterRouting,
  protectsData,
} from "./openrouter/routing.js";
export type { OpenAICompatibleCapabilities } from "./openai-compatible/capabilities.js";
export {
  createOpenAICompatibleClient,
  type OpenAICompatibleClientOptions,
} from "./openai-compatible/client.js";
export { ANTHROPIC_PRICE_VERSION, ANTHROPIC_PRICES } from "./prices/anthropic.js";
export { OPENAI_PRICE_VERSION, OPENAI_PRICES } from "./prices/openai.js";
export { OPENROUTER_PRICE_VERSION, OPENROUTER_PRICES } from "./prices/openrouter.js";
export {
  type AnthropicBatchOptions,
  createAnthropicBatchTransport,
} from "./batch/anthropic-batch.js";
export {
  createOpenAIBatchTransport,
  OPENAI_JOB_METADATA_KEY,
  type OpenAIBatchOptions,
} from "./batch/openai-batch.js";
export { type DoctorEnv, type DoctorResult, formatDoctor, runDoctor } from "./doctor.js";
export { doctorCli } from "./doctor-cli.js";
export type {
  BaseClientOptions,
  FetchLike,
  ProviderClient,
  SingleDispatchStream,
} from "./shared/types.js";
