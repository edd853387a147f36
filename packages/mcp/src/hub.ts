import { createHash } from "node:crypto";
import {
  canonicalJson,
  defineTool,
  type JsonValue,
  type ToolDefinition,
  ValidationError,
} from "@alma-harness/core";
import type { PermissionController } from "@alma-harness/loop";
import { mcpHandler } from "./call.js";
import type { McpConfig, McpServerConfig } from "./config.js";
import { type McpToolEntry, mcpPermissions } from "./permissions.js";
import { type ClientInfo, McpSessions } from "./sessions.js";
import type { ListedTool, McpProblem } from "./snapshot.js";

export interface McpOptions {
  /** The tenant (org) of a turn, from the host's own record of who it runs for (never the model). */
  readonly tenantOf: (turnId: string) => string | undefined;
  /** How the client introduces itself to servers; default `alma` with this package's version. */
  readonly clientInfo?: ClientInfo;
}

/**
 * The MCP servers of one configuration revision, open: their tools registered as Alma tools
 * (`<server>__<tool>`, deferred unless the server says otherwise), fixed for the life of this hub.
 */
export interface McpHub {
  readonly tools: readonly ToolDefinition[];
  /**
   * A digest of the configuration and of every tool snapshotted: fold it into the runner's
   * `configRevision`, so a server that changes its list means a new revision, never a grant that
   * shifts under a turn.
   */
  readonly revision: string;
  /** What was left out (a server down at open, a tool that does not fit), one line each. */
  readonly problems: readonly McpProblem[];
  /** The host's controller wrapped with the tenants' rules and the annotations (see `mcpPermissions`). */
  permissions(base?: PermissionController): PermissionController;
  /** Ends every tenant's session. */
  close(): Promise<void>;
}

/** What one server gave across its tenants: the tool registered per name (the first tenant's, by org). */
function mergeListings(
  server: McpServerConfig,
  listings: ReadonlyMap<string, readonly ListedTool[]>,
  problems: McpProblem[],
): ListedTool[] {
  const byName = new Map<string, ListedTool>();
  for (const [org, tools] of listings) {
    for (const tool of tools) {
      const first = byName.get(tool.name);
      if (first === undefined) byName.set(tool.name, tool);
      else if (first.digest !== tool.digest)
        problems.push({
          kind: "differs",
          server: server.name,
          org,
          tool: tool.name,
          detail: "this tenant's server lists it differently; its calls are refused",
        });
    }
  }
  return [...byName.values()];
}

/** Registers one snapshotted tool: its schema compiled once, here; a schema Alma cannot take is a problem. */
function register(
  entry: McpToolEntry,
  sessions: McpSessions,
  options: McpOptions,
  problems: McpProblem[],
): ToolDefinition | undefined {
  const { server, tool } = entry;
  const replaySafe = server.replaySafe.includes(tool.name) || server.replaySafe.includes("*");
  try {
    return defineTool({
      name: tool.fullName,
      description: tool.description,
      input: tool.inputSchema,
      deferred: server.deferred,
      maxOutputChars: server.maxOutputChars,
      replaySafe,
      handler: mcpHandler({ sessions, server, tool, replaySafe, tenantOf: options.tenantOf }),
    });
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    problems.push({
      kind: "bad_schema",
      server: server.name,
      tool: tool.name,
      detail: error.message.slice(0, 200),
    });
    return undefined;
  }
}

/** The revision's basis: the configuration without secrets (names of variables and headers only) and the tools. */
function revisionOf(config: McpConfig, entries: readonly McpToolEntry[]): string {
  const basis = config.servers.map((s) => ({
    name: s.name,
    transport:
      s.transport.type === "stdio"
        ? {
            command: s.transport.command,
            args: [...s.transport.args],
            env: Object.keys(s.transport.env),
          }
        : { url: s.transport.url, headers: Object.keys(s.transport.headers) },
    deferred: s.deferred,
    callTimeoutMs: s.callTimeoutMs,
    maxOutputChars: s.maxOutputChars,
    replaySafe: [...s.replaySafe],
    tenants: Object.entries(s.tenants).map(([org, b]) => ({
      org,
      rules: { allow: [...b.allow], ask: [...b.ask], deny: [...b.deny] },
      env: Object.keys(b.env),
      headers: Object.keys(b.headers),
      ...(b.args ? { args: [...b.args] } : {}),
    })),
    tools: entries.filter((e) => e.server === s).map((e) => [e.tool.name, e.tool.digest]),
  }));
  const digest = createHash("sha256")
    .update(canonicalJson(basis as unknown as JsonValue))
    .digest("hex");
  return `mcp-${digest.slice(0, 16)}`;
}

/**
 * Opens every tenant's session with every server it is bound to, snapshots the tools, and registers
 * them. A server down at open, or a tool that does not fit, is a problem; the rest is registered.
 * A tenant whose server was down at open connects on its first call.
 */
export async function openMcp(config: McpConfig, options: McpOptions): Promise<McpHub> {
  const sessions = new McpSessions(options.clientInfo ?? { name: "alma", version: "0.1.0" });
  const problems: McpProblem[] = [];
  const entries: McpToolEntry[] = [];
  for (const server of config.servers) {
    const orgs = Object.keys(server.tenants).sort();
    const opened = await Promise.all(orgs.map((org) => sessions.session(server, org)));
    const listings = new Map<string, readonly ListedTool[]>();
    opened.forEach((r, i) => {
      const org = orgs[i] as string;
      if (!r.ok) problems.push({ kind: r.kind, server: server.name, org, detail: r.detail });
      else {
        problems.push(...r.session.listing.problems);
        listings.set(org, r.session.listing.tools);
      }
    });
    for (const tool of mergeListings(server, listings, problems)) entries.push({ server, tool });
  }
  const tools: ToolDefinition[] = [];
  const registered = new Map<string, McpToolEntry>();
  for (const entry of entries) {
    const tool = register(entry, sessions, options, problems);
    if (tool === undefined) continue;
    tools.push(tool);
    registered.set(tool.name, entry);
  }
  const kept = [...registered.values()];
  return {
    tools,
    revision: revisionOf(config, kept),
    problems,
    permissions: (base) => mcpPermissions(registered, options.tenantOf, base),
    close: () => sessions.close(),
  };
}
