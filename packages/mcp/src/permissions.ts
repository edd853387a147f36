import type {
  PermissionController,
  PermissionDecision,
  PermissionRequest,
} from "@alma-harness/loop";
import type { McpServerConfig, McpTenantBinding } from "./config.js";
import type { ListedTool } from "./snapshot.js";

/** A registered MCP tool: the server it belongs to and the tool as it was snapshotted. */
export interface McpToolEntry {
  readonly server: McpServerConfig;
  readonly tool: ListedTool;
}

const RANK: Record<PermissionDecision, number> = { allow: 0, ask: 1, deny: 2 };

/** The stricter of decisions: deny over ask over allow. */
export function strictest(...decisions: readonly PermissionDecision[]): PermissionDecision {
  return decisions.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), "allow");
}

/** A tenant's rules for one tool: deny beats ask beats allow; a tool no rule names is denied. */
export function ruleFor(binding: McpTenantBinding | undefined, tool: string): PermissionDecision {
  if (binding === undefined) return "deny";
  const names = (list: readonly string[]) => list.includes(tool) || list.includes("*");
  if (names(binding.deny)) return "deny";
  if (names(binding.ask)) return "ask";
  if (names(binding.allow)) return "allow";
  return "deny";
}

/**
 * The policy of one MCP tool for one tenant: the tenant's rules, tightened to an ask when the server
 * annotates the tool `destructiveHint: true`. An annotation never widens: `readOnlyHint` and the
 * others are ignored, since the server is not who grants.
 */
export function mcpDecision(entry: McpToolEntry, org: string | undefined): PermissionDecision {
  if (org === undefined) return "deny";
  const rule = ruleFor(entry.server.tenants[org], entry.tool.name);
  return strictest(rule, entry.tool.destructive ? "ask" : "allow");
}

/**
 * Wraps the host's controller: for an MCP tool the decision is the strictest of the host's own,
 * the tenant's rules and the annotations; every other tool is the host's alone. Without a host
 * controller the host's decision is `allow` (the kernel's rule for registered tools). Asks are
 * resolved by the host's controller, as for any tool.
 */
export function mcpPermissions(
  entries: ReadonlyMap<string, McpToolEntry>,
  tenantOf: (turnId: string) => string | undefined,
  base?: PermissionController,
): PermissionController {
  const decide = async (request: PermissionRequest): Promise<PermissionDecision> => {
    const host = base ? await base.decide(request) : "allow";
    const entry = entries.get(request.tool);
    if (entry === undefined) return host;
    return strictest(host, mcpDecision(entry, tenantOf(request.turnId)));
  };
  const resolve = base?.resolve?.bind(base);
  return resolve ? { decide, resolve } : { decide };
}
