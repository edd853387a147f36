/**
 * OpenRouter usage is the Chat Completions shape (`prompt_tokens` includes cache reads and
 * writes) plus `server_tool_use_details.web_search_requests`, `cost` and `cost_details`. The
 * neutral `Usage` carries counts, not money: the charge is recomputed from the price table
 * (`OPENROUTER_PRICES`), whose rows reproduce OpenRouter's reported `cost` on the recordings.
 */
export { chatEvidence as openRouterEvidence } from "../openai-chat/usage.js";
