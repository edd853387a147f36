import {
  type Block,
  type CacheControls,
  type Msg,
  type ModelRequest,
  normalizeTemperature,
  normalizeToolChoice,
  type ServiceTier,
  TOOL_NAME,
  validateToolChoice,
} from "@alma-harness/core";
import { unsupported } from "./errors.js";
import { mediaSource } from "./media.js";

/** What an adapter can honor; `validate` refuses anything else before any I/O. */
export interface Capabilities {
  readonly tools: boolean;
  readonly webSearch: boolean;
  readonly output: boolean;
  readonly reasoning: boolean;
  /** Explicit cache breakpoints (Anthropic only). */
  readonly cache: boolean;
  readonly serviceTiers: ReadonlySet<ServiceTier>;
  /** Content types accepted per media kind and source. */
  readonly images: {
    readonly url: boolean;
    readonly base64: boolean;
    readonly types: ReadonlySet<string>;
  };
  readonly documents: {
    readonly url: boolean;
    readonly base64: boolean;
    readonly types: ReadonlySet<string>;
  };
  /** `any` accepts 0..2, `one` accepts only 1, `none` accepts no explicit temperature. */
  temperature(model: string): "any" | "one" | "none";
}

/** Checks the parts of a request every adapter checks the same way; throws `unsupported`. */
export function validateCommon(provider: string, request: ModelRequest, caps: Capabilities): void {
  const fail = (message: string) => unsupported(provider, message);
  if (typeof request.model !== "string" || request.model.length === 0)
    throw fail("a model is required");
  if (!Number.isSafeInteger(request.maxOutputTokens) || request.maxOutputTokens < 1)
    throw fail("maxOutputTokens must be a positive integer");
  if (!Array.isArray(request.messages) || request.messages.length === 0)
    throw fail("a request needs at least one message");
  checkTemperature(provider, request, caps);
  checkTools(provider, request, caps);
  if (request.output !== undefined && !caps.output)
    throw fail("native JSON schema output is not supported");
  if (request.reasoning !== undefined && !caps.reasoning)
    throw fail(`reasoning "${request.reasoning}" is not supported for ${request.model}`);
  if (request.serviceTier !== undefined && !caps.serviceTiers.has(request.serviceTier)) {
    throw fail(`service tier "${request.serviceTier}" is not supported`);
  }
  checkCache(provider, request.cache, caps);
  request.messages.forEach((msg, i) => {
    checkMessage(provider, msg, i, caps);
  });
}

function checkTemperature(provider: string, request: ModelRequest, caps: Capabilities): void {
  if (request.temperature === undefined) return;
  try {
    normalizeTemperature(request.temperature);
  } catch (error) {
    throw unsupported(provider, (error as Error).message);
  }
  const rule = caps.temperature(request.model);
  if (rule === "none")
    throw unsupported(provider, `${request.model} does not accept an explicit temperature`);
  if (rule === "one" && request.temperature !== 1)
    throw unsupported(provider, `${request.model} accepts only temperature 1`);
}

function checkTools(provider: string, request: ModelRequest, caps: Capabilities): void {
  const tools = request.tools ?? [];
  if (tools.length > 0 && !caps.tools)
    throw unsupported(provider, "function tools are not supported");
  const seen = new Set<string>();
  for (const tool of tools) {
    if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name))
      throw unsupported(provider, `invalid tool name ${JSON.stringify(tool.name)}`);
    if (seen.has(tool.name)) throw unsupported(provider, `tool "${tool.name}" is advertised twice`);
    seen.add(tool.name);
  }
  for (const spec of request.providerTools ?? []) {
    if (spec.kind !== "web_search" || !caps.webSearch)
      throw unsupported(provider, `provider tool "${spec.kind}" is not supported`);
  }
  if (request.toolChoice === undefined) return;
  try {
    normalizeToolChoice(request.toolChoice);
    validateToolChoice(request.toolChoice, tools);
  } catch (error) {
    throw unsupported(provider, (error as Error).message);
  }
  if (request.toolChoice.type === "required" && tools.length === 0)
    throw unsupported(provider, 'toolChoice "required" with no advertised tool');
}

function checkCache(
  provider: string,
  cache: CacheControls | false | undefined,
  caps: Capabilities,
): void {
  if (cache === undefined || cache === false) return;
  if (!caps.cache)
    throw unsupported(provider, "explicit cache controls are not supported (set cache: false)");
  if (cache.ttl !== "5m" && cache.ttl !== "1h")
    throw unsupported(provider, 'cache.ttl must be "5m" or "1h"');
  if (cache.tailTtl !== undefined && cache.tailTtl !== "5m" && cache.tailTtl !== "1h")
    throw unsupported(provider, 'cache.tailTtl must be "5m" or "1h"');
  // A longer-lived marker must come before a shorter one in the prompt: a 1h tail after a 5m prefix cannot.
  if (cache.ttl === "5m" && cache.tailTtl === "1h")
    throw unsupported(provider, "a 1h conversation tail cannot follow a 5m prefix");
}

function checkMessage(provider: string, msg: Msg, index: number, caps: Capabilities): void {
  const where = `messages[${index}]`;
  if (msg.role !== "user" && msg.role !== "assistant")
    throw unsupported(provider, `${where}: unknown role`);
  for (const block of msg.blocks) checkBlock(provider, msg.role, block, where, caps);
}

function checkBlock(
  provider: string,
  role: Msg["role"],
  block: Block,
  where: string,
  caps: Capabilities,
): void {
  switch (block.type) {
    case "tool_call":
      if (role !== "assistant")
        throw unsupported(provider, `${where}: a tool_call belongs to an assistant message`);
      return;
    case "tool_result":
      if (role !== "user")
        throw unsupported(provider, `${where}: a tool_result belongs to a user message`);
      return;
    case "media": {
      if (role !== "user") throw unsupported(provider, `${where}: media belongs to a user message`);
      const source = mediaSource(block);
      if (!source)
        throw unsupported(
          provider,
          `${where}: a media reference must be an http(s) URL or a base64 data URL`,
        );
      const rule = block.kind === "image" ? caps.images : caps.documents;
      if (!rule.types.has(block.contentType))
        throw unsupported(
          provider,
          `${where}: ${block.kind} type ${block.contentType} is not supported`,
        );
      if (source.kind === "url" ? !rule.url : !rule.base64)
        throw unsupported(provider, `${where}: ${block.kind} by ${source.kind} is not supported`);
      return;
    }
    default:
      return;
  }
}
