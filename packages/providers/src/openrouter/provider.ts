/** The provider name OpenRouter's blocks, receipts and routing records carry. */
export const OPENROUTER_PROVIDER = "openrouter";
