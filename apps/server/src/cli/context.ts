import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Scope } from "@alma-harness/core";
import { readEnv } from "../config/env.js";
import { loadSecrets } from "../config/secrets.js";
import { mintToken } from "../http/auth.js";
import { CliError, flag, type ParsedArgs } from "./args.js";

/** The streams and environment a command runs with; tests pass their own. */
export interface CliIo {
  readonly stdin: NodeJS.ReadableStream & { readonly isTTY?: boolean };
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** Set by `serve`: resolves when the server should stop (a signal). */
  readonly stopSignal?: Promise<void>;
}

export const DEFAULT_ORG = "sunrise-clinic";
export const DEFAULT_UID = "p-1001";

export function baseUrl(args: ParsedArgs, io: CliIo): string {
  const raw = flag(args, "url") ?? io.env.ALMA_URL ?? `http://127.0.0.1:${io.env.PORT ?? "8787"}`;
  try {
    return new URL(raw).toString().replace(/\/$/, "");
  } catch {
    throw new CliError(`--url is not a URL: ${raw}`);
  }
}

/**
 * A tenant token: `--token`, else `ALMA_TOKEN`, else one minted here with the host's secret from
 * its home directory (a dev host on this machine) for `--org`/`--uid` (default: the demo patient).
 */
export async function tenantToken(
  args: ParsedArgs,
  io: CliIo,
): Promise<{ token: string; scope?: Scope }> {
  const given = flag(args, "token") ?? io.env.ALMA_TOKEN;
  if (given) return { token: given };
  const scope = { org: flag(args, "org") ?? DEFAULT_ORG, uid: flag(args, "uid") ?? DEFAULT_UID };
  const env = readEnv(io.env, io.cwd);
  const secrets = loadSecrets(env.home, env);
  const { token } = await mintToken(secrets.jwtSecret, scope);
  return { token, scope };
}

/** The operator token: `--admin-token`, else `ALMA_ADMIN_TOKEN`, else the host's file. */
export function adminToken(args: ParsedArgs, io: CliIo): string {
  const given = flag(args, "admin-token") ?? io.env.ALMA_ADMIN_TOKEN;
  if (given) return given;
  const env = readEnv(io.env, io.cwd);
  try {
    return readFileSync(join(env.home, "admin-token"), "utf8").trim();
  } catch {
    throw new CliError(
      `no operator token: pass --admin-token, set ALMA_ADMIN_TOKEN, or run this where the host keeps ${join(env.home, "admin-token")}`,
    );
  }
}

interface ApiOptions {
  readonly token: string;
  readonly method?: string;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

/** Calls the host and returns its JSON; an error body becomes a one-line `CliError`. */
export async function api<T>(
  base: string,
  path: string,
  opts: ApiOptions,
): Promise<{ status: number; body: T }> {
  let response: Response;
  try {
    response = await fetch(`${base}${path}`, {
      method: opts.method ?? "GET",
      headers: {
        authorization: `Bearer ${opts.token}`,
        ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
        ...opts.headers,
      },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
  } catch (error) {
    throw new CliError(
      `cannot reach the host at ${base} (${(error as Error).cause ? String((error as { cause: unknown }).cause) : (error as Error).message}); is it running? (npm start)`,
    );
  }
  await failOn(response);
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
}

export async function failOn(response: Response): Promise<void> {
  if (response.ok) return;
  const text = await response.text();
  let message = `HTTP ${response.status}`;
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error) message = `${body.error.code}: ${body.error.message} (HTTP ${response.status})`;
  } catch {
    // not JSON: keep the status line
  }
  throw new CliError(message);
}

export function write(stream: NodeJS.WritableStream, line: string): void {
  stream.write(`${line}\n`);
}
