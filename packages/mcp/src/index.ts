export { EFFECT_KEY_META, McpOutcomeUnknownError } from "./call.js";
export {
  type McpConfig,
  McpConfigError,
  type McpHttpTransport,
  type McpServerConfig,
  type McpStdioTransport,
  type McpTenantBinding,
  type McpTransport,
  parseMcpConfig,
} from "./config.js";
export { type McpHub, type McpOptions, openMcp } from "./hub.js";
export { observationOf } from "./output.js";
export {
  type McpToolEntry,
  mcpDecision,
  mcpPermissions,
  ruleFor,
  strictest,
} from "./permissions.js";
export type { ClientInfo } from "./sessions.js";
export type { ListedTool, McpProblem, McpProblemKind } from "./snapshot.js";
