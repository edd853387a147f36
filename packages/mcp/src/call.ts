import {
  AlmaError,
  type JsonObject,
  type ToolContext,
  type ToolErrorValue,
  type ToolHandler,
  toolError,
} from "@alma-harness/core";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "./config.js";
import { observationOf } from "./output.js";
import type { McpSession, McpSessions } from "./sessions.js";
import type { ListedTool } from "./snapshot.js";

/**
 * A call that was sent and whose outcome is unknown (a timeout, the process gone, the connection
 * lost mid-call) for a tool not declared replay-safe: thrown, so the turn ends
 * `reconciliation_required` (cause `tool:<name>`) and the call is never guessed or sent again.
 */
export class McpOutcomeUnknownError extends AlmaError<"mcp_outcome_unknown"> {
  constructor(tool: string, detail: string, cause?: unknown) {
    super("mcp_outcome_unknown", `${tool}: sent, outcome unknown (${detail})`, { cause });
  }
}

/** The `_meta` key that carries the call's effect key to the server, the same in every run. */
export const EFFECT_KEY_META = "alma/effectKey";

/** What became of a call on the wire. */
type Sent =
  | { readonly kind: "result"; readonly value: Record<string, unknown> }
  | { readonly kind: "refused"; readonly detail: string }
  | { readonly kind: "unsent"; readonly detail: string }
  | { readonly kind: "unknown"; readonly detail: string };

const UNSENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH"]);

function detailOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\s+/g, " ").slice(0, 200);
}

/** Whether the failure happened before a byte of the request left (a refused connection). */
function neverSent(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; depth++) {
    if (e.message === "Not connected") return true;
    if (UNSENT_CODES.has((e as { code?: unknown }).code as string)) return true;
    e = e.cause;
  }
  return false;
}

/**
 * Classifies a failed request: a JSON-RPC error the server answered is certain (it refused); the
 * SDK's own timeout and connection-closed codes, and any other transport failure, are unknown.
 */
function classify(error: unknown): Sent {
  if (neverSent(error)) return { kind: "unsent", detail: detailOf(error) };
  if (
    error instanceof McpError &&
    error.code !== ErrorCode.RequestTimeout &&
    error.code !== ErrorCode.ConnectionClosed
  )
    return { kind: "refused", detail: detailOf(error) };
  return { kind: "unknown", detail: detailOf(error) };
}

async function send(
  session: McpSession,
  server: McpServerConfig,
  tool: ListedTool,
  input: JsonObject,
  ctx: ToolContext,
): Promise<Sent> {
  try {
    const value = await session.client.callTool(
      { name: tool.name, arguments: input, _meta: { [EFFECT_KEY_META]: ctx.effectKey } },
      undefined,
      { signal: ctx.signal, timeout: server.callTimeoutMs, maxTotalTimeout: server.callTimeoutMs },
    );
    return { kind: "result", value: value as Record<string, unknown> };
  } catch (error) {
    if (ctx.signal.aborted) throw error;
    return classify(error);
  }
}

function failure(code: string, server: string, detail: string): ToolErrorValue {
  return toolError({ error: code, server, detail });
}

export interface HandlerDeps {
  readonly sessions: McpSessions;
  readonly server: McpServerConfig;
  readonly tool: ListedTool;
  readonly replaySafe: boolean;
  readonly tenantOf: (turnId: string) => string | undefined;
}

/**
 * The registered tool's handler: the turn's tenant's own session (opened, or reopened after it
 * closed), the tool checked against that session's listing (a changed tool needs a new
 * configuration revision), one `tools/call` carrying the effect key, and the outcome as data:
 * a result, the server's error, or the server unreachable are observations; a call sent whose
 * outcome is unknown follows the tool's replay class.
 */
export function mcpHandler(deps: HandlerDeps): ToolHandler {
  const { sessions, server, tool } = deps;
  return async (input, ctx) => {
    const org = deps.tenantOf(ctx.turnId);
    // The permission fence denied every call of a turn with no tenant: reaching here is a host fault.
    if (org === undefined) throw new Error("the host does not know this turn's tenant");
    const opened = await sessions.session(server, org);
    if (!opened.ok) return failure("MCP_UNAVAILABLE", server.name, opened.detail);
    const live = opened.session.listing.tools.find((t) => t.name === tool.name);
    if (live === undefined || live.digest !== tool.digest)
      return failure(
        "MCP_TOOL_CHANGED",
        server.name,
        "the server no longer lists this tool as it was registered; it needs a new configuration revision",
      );
    const sent = await send(opened.session, server, tool, input, ctx);
    switch (sent.kind) {
      case "result": {
        const observation = observationOf(sent.value, server.maxOutputChars);
        return sent.value.isError === true ? toolError(observation) : observation;
      }
      case "refused":
        return failure("MCP_ERROR", server.name, sent.detail);
      case "unsent":
        sessions.drop(server, org, opened.session);
        return failure("MCP_UNAVAILABLE", server.name, sent.detail);
      case "unknown":
        sessions.drop(server, org, opened.session);
        if (!deps.replaySafe) throw new McpOutcomeUnknownError(tool.fullName, sent.detail);
        return failure(
          "MCP_OUTCOME_UNKNOWN",
          server.name,
          `${sent.detail}; the tool is replay-safe: calling it again with the same effect key is safe`,
        );
    }
  };
}
