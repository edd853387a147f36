import { type Block, type ModelChoice, type ModelRequest, type Msg, type ProviderToolSpec, sensitivityRank, type TextBlock, type ToolSpec } from "@alma-harness/core";
import type { TurnEnv } from "./env.js";
import { deepFreeze, type TurnState } from "./state.js";

/** Function tools this turn advertises: the grant's non-deferred tools, in registration order. */
export function advertisedTools(env: TurnEnv): readonly ToolSpec[] {
  const out: ToolSpec[] = [];
  for (const tool of env.grant) {
    if (tool.deferred) continue;
    const spec = env.engine.specs.get(tool.name);
    if (spec) out.push(spec);
  }
  return out;
}

/** Provider tools at or below the turn's sensitivity, withheld once their per-turn `maxUses` is spent. */
export function advertisedProviderTools(env: TurnEnv, state: TurnState): readonly ProviderToolSpec[] {
  const rank = sensitivityRank(env.input.intent.sensitivity);
  return env.engine.providerTools.filter(
    (t) => rank <= sensitivityRank(t.maxSensitivity) && (t.maxUses === undefined || state.webSearches < t.maxUses),
  );
}

/**
 * Builds one main request: the static system prompt first (the cached prefix), the session view
 * and the turn's messages, then — only in this request, never persisted — a harness notice asking
 * for a final answer when this is the last step and tools are advertised.
 */
export function buildRequest(env: TurnEnv, state: TurnState, choice: ModelChoice, notice: string | undefined): ModelRequest {
  const tools = advertisedTools(env);
  const providerTools = advertisedProviderTools(env, state);
  let messages: readonly Msg[] = state.view();
  if (notice !== undefined && (tools.length > 0 || providerTools.length > 0)) messages = withNotice(messages, notice);
  const system: TextBlock[] = env.engine.system ? [{ type: "text", text: env.engine.system }] : [];
  const deferred = env.grant.filter((t) => t.deferred).map((t) => t.name);
  return deepFreeze<ModelRequest>({
    model: choice.model,
    system,
    messages,
    tools,
    ...(providerTools.length > 0 ? { providerTools } : {}),
    ...(deferred.length > 0 ? { deferredTools: deferred } : {}),
    maxOutputTokens: choice.maxOutputTokens,
    ...(choice.cache !== false ? { cache: { ttl: choice.cache.ttl } } : {}),
    ...(choice.reasoning ? { reasoning: choice.reasoning } : {}),
    ...(choice.serviceTier ? { serviceTier: choice.serviceTier } : {}),
  });
}

function withNotice(messages: readonly Msg[], notice: string): readonly Msg[] {
  const block: Block = { type: "text", text: notice, origin: "harness" };
  const last = messages.at(-1);
  if (last && last.role === "user") return [...messages.slice(0, -1), { ...last, blocks: [...last.blocks, block] }];
  return [...messages, { role: "user", blocks: [block] }];
}
