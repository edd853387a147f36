import {
  isToolError,
  type JsonObject,
  type JsonValue,
  type StreamToolCall,
  type ToolDefinition,
  type ToolResultBlock,
} from "@alma-harness/core";
import { durable } from "./audit.js";
import { AbortedError, abortReason, CANCELLED_BEFORE_EXECUTION, CLEANUP_GRACE_MS, raceAbort, settleWithin } from "./cancel.js";
import { isExactRefusal, openGateways } from "./delegate.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import { boundOutput, toObservation } from "./output.js";
import { permissionFence } from "./permission.js";
import type { TurnState } from "./state.js";
import { parseArguments } from "./stream-validate.js";

export interface DispatchOptions {
  /** Calls at this index or later exceed `maxToolCalls`: their intent is recorded, nothing else. */
  readonly overBudgetFrom: number;
  readonly depth: number;
  /** The tools this caller may run (the turn's grant, or a delegate's narrowed one). */
  readonly grant: ReadonlyMap<string, ToolDefinition>;
}

/**
 * Runs a step's tool calls in the model's order (in batches of `maxParallelToolCalls`) and returns
 * one result per call, in that order. On cancellation the calls without a real result get a
 * synthesized "cancelled before execution" result after the real ones, and `AbortedError` is
 * thrown with them attached; a throwing handler or a failed pre-effect record throws `UncertainTurnError`.
 */
export async function dispatchCalls(env: TurnEnv, state: TurnState, calls: readonly StreamToolCall[], opts: DispatchOptions): Promise<ToolResultBlock[]> {
  const results: (ToolResultBlock | undefined)[] = new Array(calls.length).fill(undefined);
  const size = env.engine.limits.maxParallelToolCalls;
  for (let start = 0; start < calls.length; start += size) {
    const batch = calls.slice(start, start + size).map((call, i) =>
      runOne(env, state, call, start + i, opts).then((block) => {
        results[start + i] = block;
      }),
    );
    const all = Promise.all(batch);
    try {
      await raceAbort(all, env.signal);
    } catch (error) {
      if (env.signal.aborted) {
        await settleWithin(all, CLEANUP_GRACE_MS);
        throw new CancelledDispatch(abortReason(env.signal), fillCancelled(calls, results));
      }
      await settleWithin(all, CLEANUP_GRACE_MS);
      throw error;
    }
  }
  return results as ToolResultBlock[];
}

/** Carries the step's results (real, then synthesized) out of a cancelled dispatch. */
export class CancelledDispatch extends Error {
  constructor(
    readonly reason: Error,
    readonly results: ToolResultBlock[],
  ) {
    super(reason.message);
  }
}

function fillCancelled(calls: readonly StreamToolCall[], results: readonly (ToolResultBlock | undefined)[]): ToolResultBlock[] {
  return calls.map((call, i) => results[i] ?? errorResult(call, "TOOL_CANCELLED", CANCELLED_BEFORE_EXECUTION));
}

export function errorResult(call: { id: string; name: string }, code: string, message: string): ToolResultBlock {
  return { type: "tool_result", callId: call.id, name: call.name, output: message, isError: true, code };
}

async function runOne(env: TurnEnv, state: TurnState, call: StreamToolCall, index: number, opts: DispatchOptions): Promise<ToolResultBlock> {
  const { engine, input } = env;
  const base = { scope: input.scope, sessionId: input.sessionId, turnId: input.turnId, callId: call.id };
  await durable(engine.audit, { ...base, trail: "lifecycle", action: "tool.call", at: engine.clock.now(), detail: call.name });
  env.emit({ type: "tool.call", turnId: input.turnId, callId: call.id, name: call.name });
  const block = await admitAndRun(env, state, call, index, opts);
  await durable(engine.audit, { ...base, trail: "lifecycle", action: "tool.result", at: engine.clock.now(), detail: block.code ?? (block.isError ? "error" : "ok") });
  env.emit({ type: "tool.result", turnId: input.turnId, callId: call.id, name: call.name, isError: block.isError, ...(block.code ? { code: block.code } : {}) });
  return block;
}

async function admitAndRun(env: TurnEnv, state: TurnState, call: StreamToolCall, index: number, opts: DispatchOptions): Promise<ToolResultBlock> {
  if (index >= opts.overBudgetFrom) return errorResult(call, "TOOL_BUDGET_EXCEEDED", "not run: the turn's tool-call budget is spent");
  const tool = opts.grant.get(call.name);
  if (!tool) return errorResult(call, "TOOL_NOT_FOUND", `unknown tool "${call.name}"`);
  const args = parseArguments(call.arguments);
  if (!args) return errorResult(call, "TOOL_BAD_INPUT", "the arguments are not a JSON object");
  const problem = tool.validator.check(args);
  if (problem) return errorResult(call, "TOOL_BAD_INPUT", `invalid input: ${problem}`);
  let authorization: { action: string; subject: string };
  try {
    authorization = tool.authorize(args);
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's authorize threw", error);
  }
  const verdict = await permissionFence(
    {
      scope: env.input.scope,
      sessionId: env.input.sessionId,
      turnId: env.input.turnId,
      audit: env.engine.audit,
      clock: env.engine.clock,
      controller: env.engine.permissions,
      signal: env.signal,
      timeoutMs: env.engine.limits.permissionTimeoutMs,
      grants: state.grants,
      sink: env.emit,
    },
    { turnId: env.input.turnId, callId: call.id, tool: tool.name, action: authorization.action, subject: authorization.subject, input: args },
  );
  if (!verdict.allowed) return errorResult(call, "TOOL_DENIED", `permission denied: ${verdict.reason}`);
  const pre = await runHook(env, "tool:pre", () => env.engine.hooks["tool:pre"]?.({ turnId: env.input.turnId, callId: call.id, name: tool.name, input: args }));
  if (pre && typeof pre === "object" && typeof (pre as { deny?: unknown }).deny === "string") {
    return errorResult(call, "TOOL_DENIED", `denied: ${(pre as { deny: string }).deny}`);
  }
  if (tool.access) await recordAccess(env, tool, args, call.id);
  const block = await execute(env, state, tool, call, args, opts.depth);
  await runHook(env, "tool:post", () =>
    env.engine.hooks["tool:post"]?.({ turnId: env.input.turnId, callId: call.id, name: tool.name, output: block.output, isError: block.isError }),
  );
  return block;
}

async function recordAccess(env: TurnEnv, tool: ToolDefinition, args: JsonObject, callId: string): Promise<void> {
  let resource: string;
  try {
    resource = tool.access?.(args).resource ?? tool.name;
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's access declaration threw", error);
  }
  await durable(env.engine.audit, {
    trail: "access",
    scope: env.input.scope,
    sessionId: env.input.sessionId,
    turnId: env.input.turnId,
    callId,
    at: env.engine.clock.now(),
    tool: tool.name,
    resource,
    action: "read",
  });
}

async function execute(env: TurnEnv, state: TurnState, tool: ToolDefinition, call: StreamToolCall, args: JsonObject, depth: number): Promise<ToolResultBlock> {
  const gateways = openGateways(env, state, call.id, depth);
  let value: unknown;
  try {
    value = await raceAbort(Promise.resolve().then(() => tool.handler(args, gateways.context(tool.name))), env.signal);
  } catch (error) {
    if (env.signal.aborted) throw error instanceof AbortedError ? error : abortReason(env.signal);
    throw gateways.failureCause(error) ?? new UncertainTurnError(`tool:${tool.name}`, `the ${tool.name} handler threw`, error);
  } finally {
    gateways.revoke();
  }
  await gateways.settleChildren();
  if (isToolError(value)) return result(call, boundOutput(value.payload, tool.maxOutputChars), true);
  if (isExactRefusal(value)) return result(call, `delegation refused: ${value.reason}`, true);
  const observation = toObservation(value);
  if (observation === undefined) return errorResult(call, "TOOL_BAD_OUTPUT", "the tool returned something that is not JSON data");
  return result(call, boundOutput(observation, tool.maxOutputChars), false);
}

function result(call: StreamToolCall, output: JsonValue, isError: boolean): ToolResultBlock {
  return { type: "tool_result", callId: call.id, name: call.name, output, isError };
}

async function runHook<T>(env: TurnEnv, name: "tool:pre" | "tool:post", run: () => T | Promise<T> | undefined): Promise<T | undefined> {
  try {
    return await run();
  } catch (error) {
    throw new UncertainTurnError(`hook:${name}`, `the ${name} hook threw`, error);
  }
}
