import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import type { ToolDefinition } from "@alma-harness/core";
import { openMcp, parseMcpConfig } from "../src/index.js";

/**
 * The tool-search benchmark's MCP catalogs (issue 30): the tool lists of real MCP servers, read
 * through this package's own loader (`openMcp`: the SDK's stdio client, `tools/list`, every tool
 * registered deferred as `<server>__<tool>`) from the servers' npm packages, root devDependencies.
 * Each starts offline: a dummy credential is enough to list tools, and no tool is called. The
 * queries are in `packages/loop/test/toolsearch/mcp/` (README there).
 */

const MODULES = fileURLToPath(
  new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url),
);

interface Server {
  readonly name: string;
  /** The npm package under `@modelcontextprotocol/`; its `dist/index.js` is run. */
  readonly pkg: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
}

/** A dummy credential: listing tools needs none, and no tool is ever called. */
const KEY = "offline";
const server = (name: string, pkg: string, env?: Server["env"], args?: Server["args"]) => ({
  name,
  pkg,
  ...(env ? { env } : {}),
  ...(args ? { args } : {}),
});

const REFERENCE: readonly Server[] = [
  server("filesystem", "server-filesystem", {}, [tmpdir()]),
  server("memory", "server-memory", {
    MEMORY_FILE_PATH: `${tmpdir()}/alma-toolsearch-memory.jsonl`,
  }),
  server("everything", "server-everything", {}, ["stdio"]),
  server("sequential-thinking", "server-sequential-thinking"),
];

const SERVICES: readonly Server[] = [
  server("github", "server-github", { GITHUB_PERSONAL_ACCESS_TOKEN: KEY }),
  server("gitlab", "server-gitlab", { GITLAB_PERSONAL_ACCESS_TOKEN: KEY }),
  server("slack", "server-slack", { SLACK_BOT_TOKEN: KEY, SLACK_TEAM_ID: "T0" }),
  server("google-maps", "server-google-maps", { GOOGLE_MAPS_API_KEY: KEY }),
  server("brave-search", "server-brave-search", { BRAVE_API_KEY: KEY }),
  // The URL is never dialled: listing the one `query` tool opens no connection.
  server("postgres", "server-postgres", {}, ["postgresql://127.0.0.1:1/x"]),
];

export const MCP_CATALOGS = { "mcp-reference": REFERENCE, "mcp-services": SERVICES } as const;
export type McpCatalogName = keyof typeof MCP_CATALOGS;
export const MCP_CATALOG_NAMES = Object.keys(MCP_CATALOGS) as McpCatalogName[];

/** A catalog's tools as a host registers them: listed once, then every server process ended. */
export async function mcpCatalogTools(name: McpCatalogName): Promise<readonly ToolDefinition[]> {
  const config = parseMcpConfig({
    servers: MCP_CATALOGS[name].map((s) => ({
      name: s.name,
      transport: {
        type: "stdio",
        command: process.execPath,
        args: [`${MODULES}${s.pkg}/dist/index.js`, ...(s.args ?? [])],
        env: { ...s.env },
      },
      tenants: { bench: { allow: ["*"] } },
    })),
  });
  const hub = await openMcp(config, { tenantOf: () => "bench" });
  try {
    if (hub.problems.length > 0)
      throw new Error(
        `${name}: ${hub.problems.map((p) => `${p.server} ${p.kind} ${p.detail}`).join("; ")}`,
      );
    return hub.tools;
  } finally {
    await hub.close();
  }
}
