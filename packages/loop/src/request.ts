import {
  type Block,
  deepFreeze,
  type ModelChoice,
  type ModelRequest,
  type Msg,
  type ProviderToolSpec,
  type Sensitivity,
  sensitivityRank,
  type TextBlock,
  type ToolDefinition,
  type ToolSpec,
} from "@alma-harness/core";
import type { Grant } from "./grant.js";
import { type CompiledMedia, requestMessages } from "./media.js";
import { deferredSpecsOf, searchSpecOf, withLoaded } from "./search/loads.js";
import type { TurnState } from "./state.js";

interface Advertised {
  readonly specs: ReadonlyMap<string, ToolSpec>;
  readonly tools: readonly ToolSpec[];
  readonly deferred: readonly string[];
}

/** Per grant (a frozen list of frozen tools) and the engine's compiled specs: what it advertises, listed once. */
const advertisedByGrant = new WeakMap<readonly ToolDefinition[], Advertised>();

function advertisedOf(grant: Grant): Advertised {
  const known = advertisedByGrant.get(grant.tools);
  if (known !== undefined && known.specs === grant.specs) return known;
  const tools: ToolSpec[] = [];
  const deferred: string[] = [];
  for (const tool of grant.tools) {
    if (tool.deferred) {
      deferred.push(tool.name);
      continue;
    }
    const spec = grant.specs.get(tool.name);
    if (spec) tools.push(spec);
  }
  // While the grant defers any tool, search_tools follows the non-deferred ones (spec: deferred-tools).
  const search = searchSpecOf(grant.tools);
  if (search) tools.push(search);
  const out: Advertised = {
    specs: grant.specs,
    tools: Object.freeze(tools),
    deferred: Object.freeze(deferred),
  };
  if (Object.isFrozen(grant.tools)) advertisedByGrant.set(grant.tools, out);
  return out;
}

/** Function tools this turn advertises: the grant's non-deferred tools in registration order, then `search_tools` while the grant defers any. */
export function advertisedTools(grant: Grant): readonly ToolSpec[] {
  return advertisedOf(grant).tools;
}

/** Provider tools at or below the turn's sensitivity, withheld once their per-turn `maxUses` is spent. */
export function advertisedProviderTools(
  providerTools: readonly ProviderToolSpec[],
  sensitivity: Sensitivity,
  webSearches: number,
): readonly ProviderToolSpec[] {
  const rank = sensitivityRank(sensitivity);
  return providerTools.filter(
    (t) =>
      rank <= sensitivityRank(t.maxSensitivity) &&
      (t.maxUses === undefined || webSearches < t.maxUses),
  );
}

/** What a main request is built from besides the turn's state: fixed for the turn. */
export interface RequestParts {
  readonly grant: Grant;
  readonly system: string | undefined;
  readonly providerTools: readonly ProviderToolSpec[];
  readonly media: CompiledMedia | undefined;
  readonly sensitivity: Sensitivity;
}

/**
 * Builds one main request: the static system prompt first (the cached prefix), the session view
 * and the turn's messages, then — only in this request, never persisted — a harness notice asking
 * for a final answer when this is the last step and tools are advertised.
 */
export function buildRequest(
  parts: RequestParts,
  state: TurnState,
  choice: ModelChoice,
  notice: string | undefined,
): ModelRequest {
  const { grant } = parts;
  const tools = withLoaded(grant, state, advertisedTools(grant));
  const providerTools = advertisedProviderTools(
    parts.providerTools,
    parts.sensitivity,
    state.webSearches,
  );
  const view = state.log.view();
  let messages: readonly Msg[] = requestMessages(
    parts.media,
    state.log.history,
    view.slice(state.log.history.length),
    state.media,
  );
  if (notice !== undefined && (tools.length > 0 || providerTools.length > 0))
    messages = withNotice(messages, notice);
  const system: TextBlock[] = parts.system ? [{ type: "text", text: parts.system }] : [];
  const { deferred } = advertisedOf(grant);
  return deepFreeze<ModelRequest>({
    model: choice.model,
    system,
    messages,
    tools,
    ...(providerTools.length > 0 ? { providerTools } : {}),
    ...(deferred.length > 0
      ? { deferredTools: deferred, deferredToolSpecs: deferredSpecsOf(grant) }
      : {}),
    maxOutputTokens: choice.maxOutputTokens,
    ...(choice.cache !== false
      ? {
          cache: {
            ttl: choice.cache.ttl,
            ...(choice.cache.tailTtl ? { tailTtl: choice.cache.tailTtl } : {}),
          },
        }
      : {}),
    ...(choice.reasoning ? { reasoning: choice.reasoning } : {}),
    ...(choice.serviceTier ? { serviceTier: choice.serviceTier } : {}),
  });
}

function withNotice(messages: readonly Msg[], notice: string): readonly Msg[] {
  const block: Block = { type: "text", text: notice, origin: "harness" };
  const last = messages.at(-1);
  if (last && last.role === "user")
    return [...messages.slice(0, -1), { ...last, blocks: [...last.blocks, block] }];
  return [...messages, { role: "user", blocks: [block] }];
}
