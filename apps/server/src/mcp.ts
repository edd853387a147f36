import type { PermissionController } from "@alma-harness/loop";
import { type McpConfig, type McpHub, openMcp } from "@alma-harness/mcp";
import type { RuntimeConfig } from "@alma-harness/runtime";
import type { LiveTurns } from "./turns.js";

/**
 * The agent with its MCP servers' tools (the configuration file's `mcp` section): each tenant (the
 * token's `org`) gets its own sessions, credentials and rules; the tools are deferred; the host's
 * permission desk still decides, and the tenant's rules and the annotations can only tighten it.
 * The MCP revision joins the configuration revision, so a changed tool list is a new revision.
 */
export async function withMcp(
  config: RuntimeConfig,
  mcp: McpConfig | undefined,
  turns: LiveTurns,
  desk: PermissionController,
): Promise<{ readonly config: RuntimeConfig; readonly hub?: McpHub }> {
  if (mcp === undefined || mcp.servers.length === 0) return { config };
  const hub = await openMcp(mcp, { tenantOf: (turnId) => turns.owner(turnId)?.scope.org });
  return {
    hub,
    config: {
      ...config,
      tools: [...(config.tools ?? []), ...hub.tools],
      permissions: hub.permissions(desk),
      configRevision: `${config.configRevision}.${hub.revision}`,
    },
  };
}
