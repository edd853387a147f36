import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Scope } from "@alma-harness/core";
import { readEnv } from "../config/env.js";
import { type HostSecrets, loadSecrets } from "../config/secrets.js";
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
  const secrets = await cliSecrets(args, io);
  const { token } = await mintToken(secrets.jwtSecret, scope);
  return { token, scope };
}

/** Whether a host answers its health check at `base` (a second at most). */
async function reachable(base: string): Promise<boolean> {
  try {
    const response = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1_000) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * The host's secrets for a command that signs with them (`token`, a tenant command without
 * `--token`). When the home found (`ALMA_HOME`, else the nearest `.alma/` up from here) lacks one,
 * loading would create it; if a host answers at `--url`/`ALMA_URL`/the default port meanwhile, that
 * host runs with other secrets and would answer whatever is signed with new ones with a bare 401.
 * So this refuses, and says where it looked and what to do, instead of creating a second home.
 */
export async function cliSecrets(args: ParsedArgs, io: CliIo): Promise<HostSecrets> {
  const env = readEnv(io.env, io.cwd);
  const missing = [
    ["jwt-secret", env.jwtSecret],
    ["admin-token", env.adminToken],
    ["trail-key", env.trailKey],
  ].filter(([file, given]) => given === undefined && !existsSync(join(env.home, file as string)));
  if (missing.length > 0) {
    const base = baseUrl(args, io);
    if (await reachable(base))
      throw new CliError(
        `${env.home} holds no ${missing[0]?.[0]}, and a host is running at ${base} with secrets of its own: a token signed with new ones would be refused (401). Run this in the host's folder or below it, set ALMA_HOME to the host's home (or ALMA_JWT_SECRET to its secret), or pass --token`,
      );
  }
  return loadSecrets(env.home, env);
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
