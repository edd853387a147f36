import { AlmaError } from "@alma-harness/core";

/** A misconfigured MCP section: thrown at load, before any process or socket opens. */
export class McpConfigError extends AlmaError<"mcp_config"> {
  readonly path: string;
  constructor(path: string, message: string) {
    super("mcp_config", `${path}: ${message}`);
    this.path = path;
  }
}

/** A local server the host spawns, one process per tenant, speaking MCP on its stdin and stdout. */
export interface McpStdioTransport {
  readonly type: "stdio";
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  /** Added to the SDK's minimal default environment; the host's own variables are never passed. */
  readonly env: Readonly<Record<string, string>>;
}

/** A remote server over Streamable HTTP, one MCP session per tenant. */
export interface McpHttpTransport {
  readonly type: "http";
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

export type McpTransport = McpStdioTransport | McpHttpTransport;

/**
 * One tenant's binding to a server: its own credentials (environment for a process, headers for
 * HTTP, its own arguments or working folder) and its rules. A rule names tool short names, or `*`.
 * deny beats ask beats allow; a tool no rule names is denied.
 */
export interface McpTenantBinding {
  readonly env: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
  readonly cwd?: string;
  readonly allow: readonly string[];
  readonly ask: readonly string[];
  readonly deny: readonly string[];
}

export interface McpServerConfig {
  /** `[A-Za-z][A-Za-z0-9-]{0,23}`: the prefix of its tools' names (`<server>__<tool>`). */
  readonly name: string;
  readonly transport: McpTransport;
  /** Default `true`: the tools cost nothing until `search_tools` loads them. */
  readonly deferred: boolean;
  /** One call's time, after which its outcome is unknown; default 30 s. */
  readonly callTimeoutMs: number;
  /** The handshake and the tool listing; default 10 s. */
  readonly connectTimeoutMs: number;
  readonly maxOutputChars: number;
  /** Tools the host declares safe to run again with the same effect key (never from the server). */
  readonly replaySafe: readonly string[];
  /** The tenants (orgs) bound to it; a tenant not here never reaches it. */
  readonly tenants: Readonly<Record<string, McpTenantBinding>>;
}

export interface McpConfig {
  readonly servers: readonly McpServerConfig[];
}

const SERVER_NAME = /^[A-Za-z][A-Za-z0-9-]{0,23}$/;
const ORG = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const RULE = /^(\*|[A-Za-z0-9_.:/-]{1,128})$/;
const SERVER_KEYS = [
  "name",
  "transport",
  "deferred",
  "callTimeoutMs",
  "connectTimeoutMs",
  "maxOutputChars",
  "replaySafe",
  "tenants",
];
const STDIO_KEYS = ["type", "command", "args", "cwd", "env"];
const HTTP_KEYS = ["type", "url", "headers"];
const TENANT_KEYS = ["env", "headers", "args", "cwd", "allow", "ask", "deny"];

type Raw = Record<string, unknown>;

function object(value: unknown, path: string, keys: readonly string[]): Raw {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new McpConfigError(path, "must be an object");
  for (const key of Object.keys(value))
    if (!keys.includes(key)) throw new McpConfigError(`${path}.${key}`, "is not a known field");
  return value as Raw;
}

function text(value: unknown, path: string, max = 4096): string {
  if (typeof value !== "string" || value.length === 0 || value.length > max)
    throw new McpConfigError(path, `must be a string of 1-${max} characters`);
  return value;
}

function strings(value: unknown, path: string, pattern?: RegExp): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > 256)
    throw new McpConfigError(path, "must be an array of at most 256 strings");
  return value.map((item, i) => {
    const s = text(item, `${path}[${i}]`);
    if (pattern && !pattern.test(s)) throw new McpConfigError(`${path}[${i}]`, "is not a name");
    return s;
  });
}

function record(value: unknown, path: string): Record<string, string> {
  if (value === undefined) return {};
  const raw = object(value, path, Object.keys(value ?? {}));
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(raw)) {
    if (!/^[A-Za-z_][A-Za-z0-9_-]{0,127}$/.test(key))
      throw new McpConfigError(`${path}.${key}`, "is not a variable or header name");
    if (typeof item !== "string" || item.length > 8192 || /[\r\n\0]/.test(item))
      throw new McpConfigError(`${path}.${key}`, "must be a string without CR, LF or NUL");
    out[key] = item;
  }
  return out;
}

function int(value: unknown, path: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max)
    throw new McpConfigError(path, `must be an integer ${min}-${max}`);
  return value as number;
}

function transportOf(value: unknown, path: string): McpTransport {
  const type = (value as Raw | null)?.type;
  if (type === "stdio") {
    const raw = object(value, path, STDIO_KEYS);
    return {
      type,
      command: text(raw.command, `${path}.command`),
      args: strings(raw.args, `${path}.args`),
      ...(raw.cwd !== undefined ? { cwd: text(raw.cwd, `${path}.cwd`) } : {}),
      env: record(raw.env, `${path}.env`),
    };
  }
  if (type === "http") {
    const raw = object(value, path, HTTP_KEYS);
    const url = text(raw.url, `${path}.url`);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new McpConfigError(`${path}.url`, "is not a URL");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw new McpConfigError(`${path}.url`, "must be http or https");
    return { type, url, headers: record(raw.headers, `${path}.headers`) };
  }
  throw new McpConfigError(`${path}.type`, 'must be "stdio" or "http"');
}

function bindingOf(value: unknown, path: string): McpTenantBinding {
  const raw = object(value, path, TENANT_KEYS);
  return {
    env: record(raw.env, `${path}.env`),
    headers: record(raw.headers, `${path}.headers`),
    ...(raw.args !== undefined ? { args: strings(raw.args, `${path}.args`) } : {}),
    ...(raw.cwd !== undefined ? { cwd: text(raw.cwd, `${path}.cwd`) } : {}),
    allow: strings(raw.allow, `${path}.allow`, RULE),
    ask: strings(raw.ask, `${path}.ask`, RULE),
    deny: strings(raw.deny, `${path}.deny`, RULE),
  };
}

function serverOf(value: unknown, path: string): McpServerConfig {
  const raw = object(value, path, SERVER_KEYS);
  const name = text(raw.name, `${path}.name`, 24);
  if (!SERVER_NAME.test(name))
    throw new McpConfigError(`${path}.name`, "must match [A-Za-z][A-Za-z0-9-]{0,23}");
  if (raw.deferred !== undefined && typeof raw.deferred !== "boolean")
    throw new McpConfigError(`${path}.deferred`, "must be a boolean");
  const tenantsRaw = object(raw.tenants, `${path}.tenants`, Object.keys(raw.tenants ?? {}));
  const tenants: Record<string, McpTenantBinding> = {};
  for (const [org, binding] of Object.entries(tenantsRaw)) {
    if (!ORG.test(org)) throw new McpConfigError(`${path}.tenants.${org}`, "is not an org id");
    tenants[org] = bindingOf(binding, `${path}.tenants.${org}`);
  }
  return {
    name,
    transport: transportOf(raw.transport, `${path}.transport`),
    deferred: raw.deferred !== false,
    callTimeoutMs: int(raw.callTimeoutMs, `${path}.callTimeoutMs`, 30_000, 100, 600_000),
    connectTimeoutMs: int(raw.connectTimeoutMs, `${path}.connectTimeoutMs`, 10_000, 100, 120_000),
    maxOutputChars: int(raw.maxOutputChars, `${path}.maxOutputChars`, 16_000, 1, 1_000_000),
    replaySafe: strings(raw.replaySafe, `${path}.replaySafe`, RULE),
    tenants,
  };
}

/**
 * Reads the `mcp` section of a host's configuration (plain JSON data): `{ servers: [...] }`.
 * Throws `McpConfigError` naming the field; unknown fields are refused, never ignored.
 */
export function parseMcpConfig(value: unknown, path = "mcp"): McpConfig {
  const raw = object(value, path, ["servers"]);
  if (!Array.isArray(raw.servers) || raw.servers.length > 64)
    throw new McpConfigError(`${path}.servers`, "must be an array of at most 64 servers");
  const servers = raw.servers.map((s, i) => serverOf(s, `${path}.servers[${i}]`));
  const seen = new Set<string>();
  for (const s of servers) {
    if (seen.has(s.name.toLowerCase()))
      throw new McpConfigError(`${path}.servers`, `the server name "${s.name}" appears twice`);
    seen.add(s.name.toLowerCase());
  }
  return { servers };
}
