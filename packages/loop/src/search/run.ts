import {
  compileSchema,
  type JsonObject,
  type JsonValue,
  SEARCH_TOOLS_NAME,
  type StreamToolCall,
  type ToolResultBlock,
  trailId,
} from "@alma-harness/core";
import { checkpoint } from "../cancel.js";
import { errorResult } from "../output.js";
import { toolPost, toolPre } from "../tool-hooks.js";
import type { ToolRun } from "../tool-run.js";
import { argumentsOf } from "@alma-harness/execution";
import { callableNow, grantCatalog, SEARCH_INPUT_SCHEMA } from "./loads.js";
import { findTools, type SearchFindings, type SearchRequest } from "./tool-search.js";

const validator = compileSchema(SEARCH_INPUT_SCHEMA as unknown as JsonObject, "search_tools.input");

/**
 * Answers a main step's `search_tools` call in the engine itself; no host handler runs. The call's
 * intent and result are on the lifecycle trail like any call (dispatch records them); bad input is
 * `TOOL_BAD_INPUT`; `tool:pre` may deny it (`TOOL_DENIED`). It is privileged core, not a host tool:
 * it never passes the permission fence, since it reads only the turn's grant and changes nothing
 * but what the next step advertises, and every tool it loads still passes the fence when called.
 * Each load is one access event (tool `search_tools`, the loaded tool's name, action `load`),
 * written before the result is returned; the result block records them in `loads`.
 */
export async function runSearch(
  run: ToolRun,
  call: StreamToolCall,
  signal: AbortSignal,
): Promise<ToolResultBlock> {
  const args = argumentsOf(call);
  if (!args) return errorResult(call, "TOOL_BAD_INPUT", "the arguments are not a JSON object");
  const problem =
    validator.check(args) ??
    (args.query === undefined && args.names === undefined
      ? "(input) needs query or names"
      : undefined);
  if (problem) return errorResult(call, "TOOL_BAD_INPUT", `invalid input: ${problem}`);
  const deny = await toolPre(run, call.id, SEARCH_TOOLS_NAME, args, signal);
  if (deny !== undefined) return errorResult(call, "TOOL_DENIED", `denied: ${deny}`);
  checkpoint(signal);
  const findings = findTools(
    grantCatalog(run.grant),
    callableNow(run.grant, run.state),
    requestOf(args),
  );
  for (const name of findings.loaded) {
    const load = {
      tool: trailId(SEARCH_TOOLS_NAME),
      resource: trailId(name),
      action: "load",
    } as const;
    await run.rec.record("access", load, call.id);
  }
  const block: ToolResultBlock = {
    type: "tool_result",
    callId: call.id,
    name: SEARCH_TOOLS_NAME,
    output: report(findings),
    isError: false,
    ...(findings.loaded.length > 0 ? { loads: findings.loaded } : {}),
  };
  await toolPost(run, SEARCH_TOOLS_NAME, block, signal);
  return block;
}

function requestOf(args: Record<string, JsonValue>): SearchRequest {
  return {
    ...(typeof args.query === "string" ? { query: args.query } : {}),
    ...(Array.isArray(args.names)
      ? { names: args.names.filter((n): n is string => typeof n === "string") }
      : {}),
    ...(typeof args.limit === "number" ? { limit: args.limit } : {}),
  };
}

/** What the model reads: what loaded, what it can call now, and what no tool answered. */
export function report(findings: SearchFindings): JsonObject {
  const now = [...findings.loaded, ...findings.alreadyAvailable];
  const ambiguous = Object.keys(findings.ambiguous).length > 0;
  let note = now.length > 0 ? `You can call now: ${now.join(", ")}.` : "No tool was loaded.";
  if (ambiguous)
    note += " An ambiguous name is shared by several tools: name one by its full name.";
  if (findings.unknown.length > 0) note += " An unknown name is no tool you can use.";
  return {
    loaded: [...findings.loaded],
    ...(findings.alreadyAvailable.length > 0
      ? { alreadyAvailable: [...findings.alreadyAvailable] }
      : {}),
    ...(ambiguous
      ? {
          ambiguous: Object.fromEntries(
            Object.entries(findings.ambiguous).map(([k, v]) => [k, [...v]]),
          ),
        }
      : {}),
    ...(findings.unknown.length > 0 ? { unknown: [...findings.unknown] } : {}),
    note,
  };
}
