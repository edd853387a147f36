import {
  addUsage,
  type DelegateCompleted,
  type DelegateRequest,
  deepFreeze,
  type ModelChoice,
  type ModelRequest,
  type Msg,
  normalizeModelChoice,
  type Sensitivity,
  type Tier,
  type ToolDefinition,
  type Usage,
  ZERO_USAGE,
} from "@alma-harness/core";
import { attemptStep } from "./attempts.js";
import { UncertainTurnError } from "./errors.js";
import { InterruptedDispatch } from "./interrupted.js";
import type { ModelCalls } from "./step.js";
import { refusalError, rejectionError } from "./step-results.js";
import type { ToolRun } from "./tool-run.js";

/** A snapshotted, validated child request (direct or delegate). */
export interface ChildRequest extends DelegateRequest {
  readonly maxOutputTokens?: number;
}

export interface ChildSpec {
  readonly kind: "direct" | "delegate";
  readonly parentCallId: string;
  /** The depth of the handler that started the child. */
  readonly depth: number;
  /** The caller's grant: a delegate's tools are taken from it, never from the registry. */
  readonly grant: ReadonlyMap<string, ToolDefinition>;
  /** The child's own signal, linked to its caller's. */
  readonly signal: AbortSignal;
}

/**
 * A child's (or a summary's) own route: resolved from a copied intent with its kind as the task; a
 * throw, malformed choice or absent client is uncertain.
 */
export function routeChild(
  calls: Pick<ModelCalls, "resolve" | "hasClient">,
  req: { readonly tier: Tier; readonly sensitivity: Sensitivity },
  kind: "direct" | "delegate" | "summary" | "extraction",
): ModelChoice {
  try {
    const choice = normalizeModelChoice(
      calls.resolve({ tier: req.tier, sensitivity: req.sensitivity, task: kind }),
    );
    if (!calls.hasClient(choice.clientId))
      throw new Error(`the policy chose an absent client "${choice.clientId}"`);
    return choice;
  } catch (error) {
    throw new UncertainTurnError(
      `call:${kind}:routing_unavailable`,
      "the policy refused the child's route",
      error,
    );
  }
}

function childRequest(
  choice: ModelChoice,
  req: ChildRequest,
  messages: readonly Msg[],
  tools: readonly ToolDefinition[],
): ModelRequest {
  return deepFreeze<ModelRequest>({
    model: choice.model,
    system: typeof req.system === "string" ? [{ type: "text", text: req.system }] : [],
    messages: [...messages],
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema,
    })),
    maxOutputTokens: Math.min(
      choice.maxOutputTokens,
      req.maxOutputTokens ?? choice.maxOutputTokens,
    ),
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

/**
 * Runs a direct call (one step, no tools) or a delegate (its own step ceiling, a narrowed grant).
 * Children share the root's call limit, ledger and signal. A child whose step returned tool calls
 * that no later call could read (its ceiling, or the root's call limit) throws before they run.
 * A zero-cost refusal (unpriced, cap) is thrown as `CallRefusedError`; anything uncertain as
 * `UncertainTurnError`.
 */
export async function runChild(
  run: ToolRun,
  req: ChildRequest,
  spec: ChildSpec,
): Promise<DelegateCompleted> {
  const { kind, signal } = spec;
  const { calls } = run;
  const choice = routeChild(calls, req, kind);
  const tools =
    kind === "delegate"
      ? (req.tools ?? [])
          .map((n) => spec.grant.get(n))
          .filter((t): t is ToolDefinition => t !== undefined)
      : [];
  const grant = new Map(tools.map((t) => [t.name, t]));
  const maxSteps = kind === "direct" ? 1 : (req.maxSteps ?? calls.limits.delegateMaxSteps);
  const messages: Msg[] = [{ role: "user", blocks: [{ type: "text", text: req.prompt }] }];
  let usage: Usage = ZERO_USAGE;
  for (let step = 1; ; step++) {
    const request = childRequest(choice, req, messages, tools);
    const result = await attemptStep(
      calls,
      run.state,
      {
        kind,
        step,
        choice,
        request,
        parentCallId: spec.parentCallId,
        tier: req.tier,
        sensitivity: req.sensitivity,
      },
      signal,
      { task: kind },
    );
    // Out of attempts (spec: call-retry): the handler gets empty text, as for a cut step.
    if (result.status === "unanswered") return { status: "completed", text: "", usage };
    // A zero-cost refusal reaches the handler as `delegate`'s throwing contract says.
    if (result.status === "refused") throw refusalError(result);
    if (result.status === "rejected") throw rejectionError(result.rejection);
    const { done } = result;
    usage = addUsage(usage, done.receipt.usage);
    const { output } = done;
    // A cut or refused child step gives the parent no text: its output is withheld.
    if (output.stopReason === "max_tokens" || output.stopReason === "refusal")
      return { status: "completed", text: "", usage };
    if (output.toolCalls.length === 0) return { status: "completed", text: output.text, usage };
    if (step >= maxSteps)
      throw new UncertainTurnError(
        `call:${kind}:step_limit`,
        `the ${kind} exceeded its ${maxSteps} steps`,
      );
    if (run.state.callsUsed >= calls.limits.maxCalls)
      throw new UncertainTurnError(
        `call:${kind}:call_limit`,
        `no call is left to read the ${kind}'s tool results`,
      );
    messages.push({
      role: "assistant",
      blocks: output.blocks.filter(
        (b) => b.type !== "provider_tool_call" && b.type !== "provider_tool_result",
      ),
    });
    try {
      const results = await run.dispatch(run, output.toolCalls, {
        overBudgetFrom: Number.POSITIVE_INFINITY,
        depth: spec.depth + 1,
        grant,
        sensitivity: req.sensitivity,
        signal,
      });
      messages.push({ role: "user", blocks: results });
    } catch (error) {
      throw error instanceof InterruptedDispatch ? error.reason : error;
    }
  }
}
