import { createHash } from "node:crypto";
import { canonicalJson, type JsonObject, snapshot, TOOL_NAME } from "@alma-harness/core";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";

/** Why a server, a tenant's connection or one tool was left out; the rest stays. */
export type McpProblemKind =
  | "unavailable"
  | "bad_list"
  | "bad_name"
  | "bad_tool"
  | "bad_schema"
  | "too_many"
  | "differs";

export interface McpProblem {
  readonly kind: McpProblemKind;
  readonly server: string;
  readonly org?: string;
  readonly tool?: string;
  readonly detail: string;
}

/** One tool as a server listed it, checked and reduced to what Alma registers. */
export interface ListedTool {
  /** The server's own name for it. */
  readonly name: string;
  /** `<server>__<name>`: the registered name. */
  readonly fullName: string;
  readonly description: string;
  readonly inputSchema: JsonObject;
  /** The server's `destructiveHint: true`: it may only tighten the policy (an ask). */
  readonly destructive: boolean;
  /** SHA-256 of the canonical tool as listed: a change is a new tool, never a shifted grant. */
  readonly digest: string;
}

export interface Listing {
  readonly tools: readonly ListedTool[];
  readonly problems: readonly McpProblem[];
}

/** A hostile server cannot make the host page forever or hold an unbounded list. */
export const MAX_PAGES = 20;
export const MAX_TOOLS = 1_000;
export const MAX_DESCRIPTION = 4_096;

/** Every page of `tools/list`. A transport failure or a malformed page throws (the caller's). */
async function listAll(client: Client, timeoutMs: number): Promise<unknown[]> {
  const out: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.listTools(cursor === undefined ? {} : { cursor }, {
      timeout: timeoutMs,
    });
    out.push(...result.tools);
    if (out.length > MAX_TOOLS || result.nextCursor === undefined) return out;
    cursor = result.nextCursor;
  }
  return out;
}

/** One listed tool checked: its name fits Alma's, its parts are bounded plain JSON. */
function checkTool(server: string, org: string, raw: unknown): ListedTool | McpProblem {
  const problem = (kind: McpProblemKind, tool: string | undefined, detail: string) => ({
    kind,
    server,
    org,
    ...(tool === undefined ? {} : { tool }),
    detail,
  });
  let tool: JsonObject;
  try {
    tool = snapshot(raw, { maxDepth: 32, maxNodes: 10_000 }) as JsonObject;
  } catch {
    return problem("bad_tool", undefined, "a listed tool is not bounded JSON data");
  }
  const name = typeof tool.name === "string" ? tool.name : "";
  const fullName = `${server}__${name}`;
  if (!TOOL_NAME.test(fullName) || name.length === 0)
    return problem("bad_name", name.slice(0, 80), `"${fullName}" is not a tool name Alma takes`);
  const schema = tool.inputSchema;
  if (schema === null || typeof schema !== "object" || Array.isArray(schema))
    return problem("bad_schema", name, "its inputSchema is not an object");
  const inputSchema = schema as JsonObject;
  const annotations = tool.annotations as JsonObject | undefined;
  const rawDescription =
    typeof tool.description === "string" && tool.description.length > 0
      ? tool.description
      : `${typeof tool.title === "string" ? tool.title : name} (a tool of the MCP server ${server})`;
  const description = rawDescription.slice(0, MAX_DESCRIPTION);
  const digest = createHash("sha256")
    .update(canonicalJson({ name, description, inputSchema, annotations: annotations ?? {} }))
    .digest("hex");
  return {
    name,
    fullName,
    description,
    inputSchema,
    destructive: annotations?.destructiveHint === true,
    digest,
  };
}

/**
 * Lists a connected server's tools for one tenant and checks each one. A tool that does not fit
 * is a problem and left out; the others stay. A transport failure or a malformed answer throws.
 */
export async function listTools(
  client: Client,
  server: string,
  org: string,
  timeoutMs: number,
): Promise<Listing> {
  const raw = await listAll(client, timeoutMs);
  const problems: McpProblem[] = [];
  if (raw.length > MAX_TOOLS)
    problems.push({ kind: "too_many", server, org, detail: `over ${MAX_TOOLS} tools listed` });
  const checked: ListedTool[] = [];
  for (const item of raw.slice(0, MAX_TOOLS)) {
    const one = checkTool(server, org, item);
    if ("kind" in one) problems.push(one);
    else checked.push(one);
  }
  // A name listed twice is ambiguous: neither copy is registered.
  const count = new Map<string, number>();
  for (const t of checked) count.set(t.name, (count.get(t.name) ?? 0) + 1);
  const tools = checked.filter((t) => count.get(t.name) === 1);
  for (const [tool, n] of count)
    if (n > 1) problems.push({ kind: "bad_list", server, org, tool, detail: `listed ${n} times` });
  return { tools, problems };
}
