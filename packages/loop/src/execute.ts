import {
  isToolError,
  type JsonObject,
  type JsonValue,
  type StreamToolCall,
  type ToolDefinition,
  type ToolResultBlock,
  type TrailValue,
  trailId,
} from "@alma-harness/core";
import { commitBefore, durable } from "./audit.js";
import { checkpoint, raceOwned } from "./cancel.js";
import { isExactRefusal, openGateways } from "./delegate.js";
import { type DispatchOptions, errorResult } from "./dispatch.js";
import type { TurnEnv } from "./env.js";
import { UncertainTurnError } from "./errors.js";
import { boundOutput, toObservation } from "./output.js";
import { permissionFence } from "./permission.js";
import { isSearchCall } from "./search/loads.js";
import { runSearch } from "./search/run.js";
import type { TurnState } from "./state.js";
import { trailBase, type TurnTrail } from "./trail.js";
import { argumentsOf } from "@alma-harness/execution";

/**
 * Admission then execution of one call whose intent is already durable: a call over the tool-call
 * budget, an unknown name or invalid input becomes an error observation and never reaches policy;
 * then the authorization intent, the durable permission fence, `tool:pre`, the access record, the
 * handler (with its gateways), the bounded output and `tool:post`.
 */
export async function admitAndRun(
  env: TurnEnv,
  state: TurnState,
  call: StreamToolCall,
  index: number,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  if (index >= opts.overBudgetFrom)
    return errorResult(
      call,
      "TOOL_BUDGET_EXCEEDED",
      "not run: the turn's tool-call budget is spent",
    );
  // The engine answers its own search, for main steps only: a delegate is never offered it (spec: deferred-tools).
  if (opts.depth === 0 && isSearchCall(env.grant, call)) return runSearch(env, state, call, signal);
  const tool = opts.grant.get(call.name);
  if (!tool) return errorResult(call, "TOOL_NOT_FOUND", `unknown tool "${call.name}"`);
  const args = argumentsOf(call);
  if (!args) return errorResult(call, "TOOL_BAD_INPUT", "the arguments are not a JSON object");
  const problem = tool.validator.check(args);
  if (problem) return errorResult(call, "TOOL_BAD_INPUT", `invalid input: ${problem}`);
  let authorization: { action: string; subject: string };
  try {
    const intent = tool.authorize(args);
    authorization = { action: String(intent.action), subject: String(intent.subject) };
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's authorize threw", error);
  }
  checkpoint(signal);
  const verdict = await permissionFence(
    {
      trail: env.rec.trail,
      turnId: env.input.turnId,
      audit: env.engine.audit,
      clock: env.engine.clock,
      controller: env.engine.permissions,
      signal,
      timeoutMs: env.engine.limits.permissionTimeoutMs,
      grants: state.grants,
      emit: env.rec.emit,
      commit: () => commitBefore(env.engine),
    },
    Object.freeze({
      turnId: env.input.turnId,
      callId: call.id,
      tool: tool.name,
      action: authorization.action,
      subject: authorization.subject,
      input: args,
    }),
    recordedAuthorization(env.rec.trail, tool, authorization),
  );
  if (!verdict.allowed)
    return errorResult(call, "TOOL_DENIED", `permission denied: ${verdict.reason}`);
  const preHook = env.engine.hooks["tool:pre"];
  // A hook nobody registered costs nothing: only the checkpoint it would have passed remains.
  if (preHook) await commitBefore(env.engine);
  const pre = preHook
    ? await runHook(signal, "tool:pre", () =>
        preHook(
          Object.freeze({
            turnId: env.input.turnId,
            callId: call.id,
            name: tool.name,
            input: args,
          }),
        ),
      )
    : checkpoint(signal);
  if (pre && typeof pre === "object" && typeof (pre as { deny?: unknown }).deny === "string") {
    return errorResult(call, "TOOL_DENIED", `denied: ${(pre as { deny: string }).deny}`);
  }
  if (tool.access) await recordAccess(env, tool, args, call.id);
  const block = await execute(env, state, tool, call, args, opts, signal);
  // A call that ran keeps its real result: a stop during (or before) tool:post does not erase it.
  const postHook = env.engine.hooks["tool:post"];
  if (signal.aborted || !postHook) return block;
  await commitBefore(env.engine);
  const post = Object.freeze({
    turnId: env.input.turnId,
    callId: call.id,
    name: tool.name,
    output: block.output,
    isError: block.isError,
  });
  try {
    await runHook(signal, "tool:post", () => postHook(post));
  } catch (error) {
    if (!signal.aborted) throw error;
  }
  return block;
}

/**
 * The authorization as the policy trail records it: the action the tool derived (kept when it is
 * a vocabulary word, else hashed) and the subject's keyed hash, unless the tool declares its
 * subjects non-sensitive. The default subject `*` is the kernel's own and stays `*`.
 */
function recordedAuthorization(
  trail: TurnTrail,
  tool: ToolDefinition,
  a: { action: string; subject: string },
): { action: TrailValue; subject: TrailValue } {
  const subject =
    a.subject === "*"
      ? trailId("*")
      : tool.nonSensitiveTrail
        ? trail.idOrHash(a.subject)
        : trail.hash(a.subject);
  return { action: trail.kindOrHash(a.action), subject };
}

async function recordAccess(
  env: TurnEnv,
  tool: ToolDefinition,
  args: JsonObject,
  callId: string,
): Promise<void> {
  let resource: unknown;
  try {
    resource = tool.access?.(args).resource;
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's access declaration threw", error);
  }
  if (typeof resource !== "string" || resource.length === 0 || resource.length > 500) {
    throw new UncertainTurnError(
      `tool:${tool.name}`,
      "the tool's access declaration is not a resource of 1-500 characters",
    );
  }
  await durable(env.engine.audit, {
    trail: "access",
    ...trailBase(env.rec.trail, env.engine.clock.now(), callId),
    tool: trailId(tool.name),
    resource: tool.nonSensitiveTrail
      ? env.rec.trail.idOrHash(resource)
      : env.rec.trail.hash(resource),
    action: "read",
  });
}

/**
 * Runs the handler, raced against the signal (code that ignores it cannot hold the turn). Its
 * gateways are revoked when it settles; a child it started and did not await, or a child failure
 * it swallowed, makes the turn uncertain. A returned `toolError` is an error result; the exact
 * refusal object a gateway returned is a bounded error result; anything else must be JSON data.
 */
async function execute(
  env: TurnEnv,
  state: TurnState,
  tool: ToolDefinition,
  call: StreamToolCall,
  args: JsonObject,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  // The effect: the intent, the decision and the access record are durable before the handler runs.
  await commitBefore(env.engine);
  checkpoint(signal);
  const gateways = openGateways(env, state, {
    callId: call.id,
    depth: opts.depth,
    grant: opts.grant,
    sensitivity: opts.sensitivity,
    signal,
  });
  let value: unknown;
  try {
    // Invoked synchronously after the checkpoint: no microtask gap in which a cancel could slip by.
    value = await raceOwned(
      new Promise((resolve) => resolve(tool.handler(args, gateways.context(tool.name)))),
      signal,
    );
  } catch (error) {
    gateways.revoke(true);
    if (signal.aborted) throw error;
    throw (
      gateways.failureCause() ??
      new UncertainTurnError(`tool:${tool.name}`, `the ${tool.name} handler threw`, error)
    );
  }
  gateways.revoke(false);
  if (isExactRefusal(value))
    return result(
      call,
      boundOutput(`delegation refused: ${value.reason}`, tool.maxOutputChars),
      true,
    );
  if (isToolError(value)) {
    const payload = toObservation(value.payload);
    if (payload === undefined)
      return errorResult(call, "TOOL_BAD_OUTPUT", "the tool's error payload is not JSON data");
    return result(call, boundOutput(payload, tool.maxOutputChars), true);
  }
  const observation = toObservation(value);
  if (observation === undefined)
    return errorResult(
      call,
      "TOOL_BAD_OUTPUT",
      "the tool returned something that is not JSON data",
    );
  return result(call, boundOutput(observation, tool.maxOutputChars), false);
}

function result(call: StreamToolCall, output: JsonValue, isError: boolean): ToolResultBlock {
  return { type: "tool_result", callId: call.id, name: call.name, output, isError };
}

export async function runHook<T>(
  signal: AbortSignal,
  name: "tool:pre" | "tool:post",
  run: () => T | Promise<T> | undefined,
): Promise<T | undefined> {
  checkpoint(signal);
  try {
    return await raceOwned(new Promise<T | undefined>((resolve) => resolve(run())), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new UncertainTurnError(`hook:${name}`, `the ${name} hook threw`, error);
  }
}
