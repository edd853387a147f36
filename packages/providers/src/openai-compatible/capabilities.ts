import { IMAGE_TYPES } from "../shared/media.js";
import type { Capabilities } from "../shared/validate.js";

/**
 * What a self-hosted or third-party Chat Completions server supports, as its operator declares it.
 * Nothing is assumed: an undeclared capability is refused by `validate` before any I/O.
 */
export interface OpenAICompatibleCapabilities {
  /** Function tools and `tool_choice`. Default false. */
  readonly tools?: boolean;
  /** The server sends a usage chunk when asked with `stream_options.include_usage`. Default false. */
  readonly streamUsage?: boolean;
  /** `reasoning_effort` is accepted (reasoning text is read from `reasoning_content`/`reasoning`). Default false. */
  readonly reasoning?: boolean;
  /** Images as `image_url` parts (https or data URLs). Default false. */
  readonly images?: boolean;
  /** PDF documents as base64 `file` parts. Default false. */
  readonly documents?: boolean;
  /** `response_format: {type: "json_schema"}`. Default false. */
  readonly jsonSchema?: boolean;
  /** An explicit temperature. Default true. */
  readonly temperature?: boolean;
  /** The max-tokens field the server reads. Default `max_tokens`. */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens";
}

export function compatCapabilities(declared: OpenAICompatibleCapabilities): Capabilities {
  return {
    tools: declared.tools === true,
    webSearch: false,
    output: declared.jsonSchema === true,
    reasoning: declared.reasoning === true,
    cache: false,
    serviceTiers: new Set(["standard"]),
    images: { url: declared.images === true, base64: declared.images === true, types: IMAGE_TYPES },
    documents: {
      url: false,
      base64: declared.documents === true,
      types: new Set(["application/pdf"]),
    },
    temperature: () => (declared.temperature === false ? "none" : "any"),
  };
}
