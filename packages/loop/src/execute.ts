import {
  isToolError,
  type JsonObject,
  type InputCheck,
  type JsonValue,
  type StreamToolCall,
  type ToolDefinition,
  type ToolResultBlock,
  type TrailValue,
  trailId,
} from "@alma-harness/core";
import { type AskDecision, pendingAsk } from "./asks.js";
import { checkpoint, raceOwned } from "./cancel.js";
import type { PendingAsk } from "./continuation.js";
import { isExactRefusal, openGateways } from "./delegate.js";
import { UncertainTurnError } from "./errors.js";
import { boundOutput, errorResult, toObservation } from "./output.js";
import { permissionFence, resolvedAsk } from "./permission.js";
import { toolPost, toolPre } from "./tool-hooks.js";
import { isSearchCall } from "./search/loads.js";
import { runSearch } from "./search/run.js";
import type { Recorder } from "./recorder.js";
import type { DispatchOptions, ToolRun } from "./tool-run.js";
import type { TurnTrail } from "./trail.js";
import { argumentsOf } from "@alma-harness/execution";

/**
 * A call that passed admission: its tool, its checked arguments, what the handler gets (the
 * arguments, or a Standard Schema's output) and its authorization.
 */
interface Admitted {
  readonly tool: ToolDefinition;
  readonly args: JsonObject;
  readonly value: unknown;
  readonly authorization: { readonly action: string; readonly subject: string };
}

/** A call that parked on a permission ask: the turn waits for its decision. */
export interface Asked {
  readonly type: "asked";
  readonly ask: PendingAsk;
}

/**
 * Admission then execution of one call whose intent is already durable: a call over the tool-call
 * budget, an unknown name or invalid input becomes an error observation and never reaches policy;
 * then the authorization intent, the durable permission fence, `tool:pre`, the access record, the
 * handler (with its gateways), the bounded output and `tool:post`. With parking on, an ask of a
 * main step's call answers `asked`; a resumed call brings its `decision` instead of asking again.
 */
export async function admitAndRun(
  run: ToolRun,
  call: StreamToolCall,
  index: number,
  opts: DispatchOptions,
  signal: AbortSignal,
  decision?: AskDecision,
): Promise<ToolResultBlock | Asked> {
  if (index >= opts.overBudgetFrom)
    return errorResult(
      call,
      "TOOL_BUDGET_EXCEEDED",
      "not run: the turn's tool-call budget is spent",
    );
  // The engine answers its own search, for main steps only: a delegate is never offered it (spec: deferred-tools).
  if (opts.depth === 0 && isSearchCall(run.grant, call)) return runSearch(run, call, signal);
  const admitted = await admit(call, opts);
  if ("type" in admitted) return admitted;
  checkpoint(signal);
  const { tool, args, authorization } = admitted;
  const { rec } = run;
  const request = Object.freeze({
    turnId: rec.turnId,
    callId: call.id,
    tool: tool.name,
    action: authorization.action,
    subject: authorization.subject,
    input: args,
  });
  const recorded = recordedAuthorization(rec.trail, tool, authorization);
  const fence = {
    rec,
    clock: run.clock,
    controller: run.permissions,
    signal,
    timeoutMs: run.limits.permissionTimeoutMs,
    grants: run.state.grants,
    // Only a main step's call can park: a delegate's runs inside a handler that cannot wait.
    park: run.park && opts.depth === 0,
  };
  const verdict = decision
    ? await resolvedAsk(fence, request, recorded, decision)
    : await permissionFence(fence, request, recorded);
  if ("parked" in verdict)
    return {
      type: "asked",
      ask: pendingAsk(rec.turnId, { id: call.id, tool: tool.name, input: args }, recorded.action),
    };
  if (!verdict.allowed)
    return errorResult(call, "TOOL_DENIED", `permission denied: ${verdict.reason}`);
  return runAllowed(run, admitted, call, opts, signal);
}

/**
 * Known tool, JSON object arguments its schema accepts (a Standard Schema's refinements run too),
 * an authorization it derives: or the error result. A schema library or `authorize` that throws
 * is the tool's code failing: the turn is uncertain.
 */
async function admit(
  call: StreamToolCall,
  opts: DispatchOptions,
): Promise<Admitted | ToolResultBlock> {
  const tool = opts.grant.get(call.name);
  if (!tool) return errorResult(call, "TOOL_NOT_FOUND", `unknown tool "${call.name}"`);
  const args = argumentsOf(call);
  if (!args) return errorResult(call, "TOOL_BAD_INPUT", "the arguments are not a JSON object");
  let checked: InputCheck;
  try {
    checked = await tool.validator.validate(args);
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's input schema threw", error);
  }
  if (!checked.ok) return errorResult(call, "TOOL_BAD_INPUT", `invalid input: ${checked.problem}`);
  try {
    const intent = tool.authorize(args);
    const authorization = { action: String(intent.action), subject: String(intent.subject) };
    return { tool, args, value: checked.value, authorization };
  } catch (error) {
    throw new UncertainTurnError(`tool:${tool.name}`, "the tool's authorize threw", error);
  }
}

/** An allowed call: `tool:pre`, the access record, the handler, then `tool:post`. */
async function runAllowed(
  run: ToolRun,
  { tool, args, value }: Admitted,
  call: StreamToolCall,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  const deny = await toolPre(run, call.id, tool.name, args, signal);
  if (deny !== undefined) return errorResult(call, "TOOL_DENIED", `denied: ${deny}`);
  if (tool.access) await recordAccess(run.rec, tool, args, call.id);
  const block = await execute(run, tool, call, value, opts, signal);
  await toolPost(run, tool.name, block, signal);
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
  rec: Recorder,
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
  await rec.record(
    "access",
    {
      tool: trailId(tool.name),
      resource: tool.nonSensitiveTrail ? rec.trail.idOrHash(resource) : rec.trail.hash(resource),
      action: "read",
    },
    callId,
  );
}

/**
 * Runs the handler, raced against the signal (code that ignores it cannot hold the turn). Its
 * gateways are revoked when it settles; a child it started and did not await, or a child failure
 * it swallowed, makes the turn uncertain. A returned `toolError` is an error result; the exact
 * refusal object a gateway returned is a bounded error result; anything else must be JSON data.
 */
async function execute(
  run: ToolRun,
  tool: ToolDefinition,
  call: StreamToolCall,
  input: unknown,
  opts: DispatchOptions,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  // The effect: the intent, the decision and the access record are durable before the handler runs
  // (a pure tool has none: they commit with its result and the next call's claim, see `pure`).
  if (!tool.pure) await run.rec.commit();
  checkpoint(signal);
  const gateways = openGateways(run, {
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
      new Promise((resolve) =>
        resolve(tool.handler(input as JsonObject, gateways.context(tool.name))),
      ),
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
