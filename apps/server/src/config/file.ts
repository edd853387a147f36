import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type McpConfig, McpConfigError, parseMcpConfig } from "@alma-harness/mcp";
import { EnvError } from "./env.js";

/** The host's configuration file: what does not fit in an environment variable. */
export interface HostFileConfig {
  /** Where it was read from; absent when there is no file. */
  readonly path?: string;
  /** MCP servers whose tools the agent gets, per tenant (`@alma-harness/mcp`). */
  readonly mcp?: McpConfig;
}

const SECTIONS = ["mcp"];

/**
 * Reads `ALMA_CONFIG` (a JSON file), or `alma.config.json` in the working directory when it exists.
 * A named file that is missing, a file that is not JSON, an unknown section or a bad `mcp` section
 * is an `EnvError` naming the file and the field: the host does not start half-configured.
 */
export function readHostConfig(env: NodeJS.ProcessEnv, cwd: string): HostFileConfig {
  const named = env.ALMA_CONFIG?.trim();
  const path = resolve(cwd, named || "alma.config.json");
  if (!existsSync(path)) {
    if (named) throw new EnvError(`ALMA_CONFIG: ${path} does not exist`);
    return {};
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    throw new EnvError(`${path}: not a JSON file`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new EnvError(`${path}: must hold a JSON object`);
  for (const key of Object.keys(raw))
    if (!SECTIONS.includes(key))
      throw new EnvError(`${path}: "${key}" is not a section (known: ${SECTIONS.join(", ")})`);
  const section = (raw as { mcp?: unknown }).mcp;
  try {
    return { path, ...(section === undefined ? {} : { mcp: parseMcpConfig(section) }) };
  } catch (error) {
    if (error instanceof McpConfigError) throw new EnvError(`${path}: ${error.message}`);
    throw error;
  }
}
