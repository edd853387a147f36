import {
  type DelegateAttempt,
  type DelegateCompleted,
  type DelegateRefused,
  type DelegateRefusalReason,
  type DelegateRequest,
  type DirectRequest,
  type Msg,
  type ModelGateways,
  type ModelRequest,
  normalizeModelChoice,
  SEARCH_TOOLS_NAME,
  sensitivityRank,
  type ToolContext,
  type ToolDefinition,
  type ToolSpec,
  type Usage,
  ValidationError,
  ZERO_USAGE,
  addUsage,
  isSensitivity,
  isTier,
  snapshot,
} from "@alma-harness/core";
import { CallRefusedError } from "@alma-harness/execution";
import { dispatchCalls } from "./dispatch.js";
import type { TurnEnv } from "./env.js";
import { DelegationRefusedError, UncertainTurnError } from "./errors.js";
import { deepFreeze, type TurnState } from "./state.js";
import { runModelStep } from "./step.js";

const refusals = new WeakSet<object>();
const MAX_PROMPT = 1_000_000;

function refusal(reason: DelegateRefusalReason): DelegateRefused {
  const value = Object.freeze({ status: "refused" as const, reason });
  refusals.add(value);
  return value;
}

/** True only for the exact frozen refusal object a gateway returned; a clone is ordinary output. */
export function isExactRefusal(value: unknown): value is DelegateRefused {
  return typeof value === "object" && value !== null && refusals.has(value);
}

/** Snapshots a child request: plain data, closed fields, valid tier and sensitivity, bounded prompt and tools. */
function snapshotRequest(raw: unknown, allowed: readonly string[], path: string): Record<string, unknown> {
  const copy = snapshot(raw) as Record<string, unknown>;
  if (copy === null || typeof copy !== "object" || Array.isArray(copy)) throw new ValidationError(path, "object", `${path} must be an object`);
  for (const key of Object.keys(copy)) if (!allowed.includes(key)) throw new ValidationError(`${path}.${key}`, "unknown_field", `${path}.${key} is not allowed`);
  if (!isTier(copy.tier)) throw new ValidationError(`${path}.tier`, "closed", `${path}.tier is not a tier`);
  if (!isSensitivity(copy.sensitivity)) throw new ValidationError(`${path}.sensitivity`, "closed", `${path}.sensitivity is not a sensitivity`);
  if (typeof copy.prompt !== "string" || copy.prompt.length === 0 || copy.prompt.length > MAX_PROMPT) {
    throw new ValidationError(`${path}.prompt`, "string_1_1000000", `${path}.prompt must be 1-1,000,000 UTF-16 units`);
  }
  if (copy.system !== undefined && typeof copy.system !== "string") throw new ValidationError(`${path}.system`, "string", `${path}.system must be a string`);
  if (copy.tools !== undefined) {
    const tools = copy.tools;
    if (!Array.isArray(tools) || tools.length > 256 || tools.some((t) => typeof t !== "string" || t.length < 1 || t.length > 200)) {
      throw new ValidationError(`${path}.tools`, "names_256", `${path}.tools must be at most 256 names of 1-200 units`);
    }
  }
  for (const key of ["maxSteps", "maxOutputTokens"]) {
    const v = copy[key];
    if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < 1 || (v as number) > 1000)) {
      throw new ValidationError(`${path}.${key}`, "range", `${path}.${key} must be an integer 1-1000`);
    }
  }
  return copy;
}

export interface HandlerGateways {
  context(toolName: string): ToolContext;
  revoke(): void;
  failureCause(error: unknown): UncertainTurnError | undefined;
  settleChildren(): Promise<void>;
}

/**
 * Opens the model gateways for one live handler. Children share the root's call limit, ledger
 * (caps) and signal; sensitivity only narrows; a delegate gets at most the parent's tools, never
 * search or provider tools. Gateways are revoked when the handler settles; a child still running
 * then, or one that failed even if the handler swallowed it, makes the turn uncertain.
 */
export function openGateways(env: TurnEnv, state: TurnState, callId: string, depth: number): HandlerGateways {
  let live = true;
  const pending = new Set<Promise<unknown>>();
  let poison: UncertainTurnError | undefined;
  const track = <T>(work: () => Promise<T>): Promise<T> => {
    if (!live) return Promise.reject(new UncertainTurnError("child", "the gateways were revoked when the handler settled"));
    const p = work().catch((error: unknown) => {
      poison ??= error instanceof UncertainTurnError ? error : new UncertainTurnError("child", "a child call failed", error);
      throw error;
    });
    pending.add(p);
    p.then(
      () => pending.delete(p),
      () => pending.delete(p),
    );
    return p;
  };
  const structural = (req: Record<string, unknown>, delegate: boolean): DelegateRefusalReason | undefined => {
    if (delegate && depth + 1 > env.engine.limits.maxDelegateDepth) return "depth";
    if (sensitivityRank(req.sensitivity as never) > sensitivityRank(env.input.intent.sensitivity)) return "sensitivity";
    if (delegate) {
      const parent = new Set(env.grant.map((t) => t.name));
      for (const name of (req.tools as string[] | undefined) ?? []) if (name === SEARCH_TOOLS_NAME || !parent.has(name)) return "tool_grant";
    }
    return undefined;
  };
  const models: ModelGateways = {
    direct: (raw: DirectRequest) =>
      track(async () => {
        if (raw && typeof raw === "object" && "toolChoice" in raw) throw new ValidationError("direct.toolChoice", "unsupported", "models.direct is tool-free: toolChoice is rejected");
        const req = snapshotRequest(raw, ["tier", "sensitivity", "prompt", "system", "maxOutputTokens"], "direct");
        const reason = structural(req, false);
        if (reason) throw new DelegationRefusedError(reason);
        return runChild(env, state, req, [], callId, "direct", depth, 1);
      }),
    delegate: (raw: DelegateRequest) =>
      track(async () => {
        const req = snapshotRequest(raw, ["tier", "sensitivity", "prompt", "system", "tools", "maxSteps"], "delegate");
        const reason = structural(req, true);
        if (reason) throw new DelegationRefusedError(reason);
        return runDelegate(env, state, req, callId, depth);
      }),
    tryDelegate: (raw: DelegateRequest) =>
      track(async (): Promise<DelegateAttempt> => {
        const req = snapshotRequest(raw, ["tier", "sensitivity", "prompt", "system", "tools", "maxSteps"], "delegate");
        const reason = structural(req, true);
        if (reason) return refusal(reason);
        return runDelegate(env, state, req, callId, depth);
      }),
  };
  return {
    context: (toolName) =>
      Object.freeze({
        turnId: env.input.turnId,
        callId,
        sessionId: env.input.sessionId,
        toolName,
        facts: env.input.facts ?? Object.freeze({}),
        signal: env.signal,
        depth,
        now: () => env.engine.clock.now(),
        models: Object.freeze(models),
      }),
    revoke: () => {
      live = false;
    },
    failureCause: () => poison,
    settleChildren: async () => {
      if (pending.size > 0) throw new UncertainTurnError("children_pending", "a child call was started and not awaited");
      if (poison) throw poison;
    },
  };
}

async function runDelegate(env: TurnEnv, state: TurnState, req: Record<string, unknown>, callId: string, depth: number): Promise<DelegateCompleted> {
  const names = (req.tools as string[] | undefined) ?? [];
  const grant = new Map<string, ToolDefinition>();
  for (const name of names) {
    const tool = env.engine.tools.get(name);
    if (tool) grant.set(name, tool);
  }
  const maxSteps = (req.maxSteps as number | undefined) ?? env.engine.limits.delegateMaxSteps;
  return runChild(env, state, req, [...grant.values()], callId, "delegate", depth, maxSteps);
}

async function runChild(
  env: TurnEnv,
  state: TurnState,
  req: Record<string, unknown>,
  tools: readonly ToolDefinition[],
  parentCallId: string,
  kind: "direct" | "delegate",
  depth: number,
  maxSteps: number,
): Promise<DelegateCompleted> {
  const intent = { tier: req.tier as never, sensitivity: req.sensitivity as never, task: kind };
  let choice: ReturnType<typeof normalizeModelChoice>;
  try {
    choice = normalizeModelChoice(env.engine.policy.resolve({ ...intent }));
  } catch (error) {
    throw new UncertainTurnError(`call:${kind}:routing_unavailable`, "the policy refused the child's route", error);
  }
  const specs: ToolSpec[] = tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  const grant = new Map(tools.map((t) => [t.name, t]));
  const messages: Msg[] = [{ role: "user", blocks: [{ type: "text", text: req.prompt as string }] }];
  let usage: Usage = ZERO_USAGE;
  for (let step = 1; step <= maxSteps; step++) {
    if (state.ledger.calls >= env.engine.limits.maxCalls) throw new UncertainTurnError(`call:${kind}:call_limit`, "no call is left for the child");
    const maxOutputTokens = Math.min(choice.maxOutputTokens, (req.maxOutputTokens as number | undefined) ?? choice.maxOutputTokens);
    const request: ModelRequest = deepFreeze({
      model: choice.model,
      system: typeof req.system === "string" ? [{ type: "text" as const, text: req.system }] : [],
      messages: [...messages],
      tools: specs,
      maxOutputTokens,
      ...(choice.cache !== false ? { cache: { ttl: choice.cache.ttl } } : {}),
      ...(choice.reasoning ? { reasoning: choice.reasoning } : {}),
    });
    let done: Awaited<ReturnType<typeof runModelStep>>;
    try {
      done = await runModelStep(env, state, { kind, step, choice, request, parentCallId, tier: intent.tier, sensitivity: intent.sensitivity });
    } catch (error) {
      if (error instanceof CallRefusedError) throw new UncertainTurnError(`call:${kind}:refused:${error.reason}`, error.message, error);
      throw error;
    }
    usage = addUsage(usage, done.receipt.usage);
    const { output } = done;
    if (output.stopReason === "max_tokens") return { status: "completed", text: "", usage };
    if (output.toolCalls.length === 0) return { status: "completed", text: output.text, usage };
    messages.push({ role: "assistant", blocks: output.blocks.filter((b) => b.type !== "provider_tool_call" && b.type !== "provider_tool_result") });
    const results = await dispatchCalls(env, state, output.toolCalls, { overBudgetFrom: Number.POSITIVE_INFINITY, depth: depth + 1, grant });
    messages.push({ role: "user", blocks: results });
  }
  throw new UncertainTurnError(`call:${kind}:step_limit`, `the ${kind} exceeded its ${maxSteps} steps`);
}
