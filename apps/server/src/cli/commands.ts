import { type AuditRecord, microsToUsd } from "@alma-harness/core";
import { readEnv } from "../config/env.js";
import { mintToken } from "../http/auth.js";
import { migrateStore } from "../runtime.js";
import { CliError, flag, type ParsedArgs } from "./args.js";
import { adminToken, api, baseUrl, type CliIo, cliSecrets, tenantToken, write } from "./context.js";

export const SESSIONS_HELP = `alma sessions: the sessions of each tenant (operator).

Usage: alma sessions [--org ORG] [--url URL] [--admin-token TOKEN]`;

export const TRAILS_HELP = `alma trails: a turn's audit trails as a timeline (operator).

Usage: alma trails <rootKey> [--org ORG] [--uid UID] [--url URL] [--admin-token TOKEN]`;

export const ERASE_HELP = `alma erase: erase one of your sessions (its messages and stored results).

Usage: alma erase --session ID [--token JWT | --org ORG --uid UID] [--url URL]`;

export const TOKEN_HELP = `alma token: mint a tenant token with this machine's dev secret (.alma/jwt-secret or $ALMA_JWT_SECRET).

Usage: alma token --org ORG --uid UID [--ttl SECONDS]
Prints only the token, so TOKEN=$(alma token --org sunrise-clinic --uid p-1001) works. The secret
is read from ALMA_HOME, else the nearest .alma/ up from here; where there is none and a host
answers at $ALMA_URL (or the default port), this refuses rather than make a new secret that host
would not accept.`;

export const MIGRATE_HELP = `alma migrate: bring the configured store's schema up to date.

Usage: alma migrate   (reads ALMA_HOME and ALMA_DATABASE_URL like the host)`;

interface SessionRow {
  readonly uid: string;
  readonly sessionId: string;
  readonly revision: number;
  readonly updatedAt: number;
}

export async function sessionsCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const base = baseUrl(args, io);
  const token = adminToken(args, io);
  const org = flag(args, "org");
  const tenants = org
    ? [org]
    : (
        await api<{ tenants: { org: string }[] }>(base, "/v1/admin/tenants", { token })
      ).body.tenants.map((t) => t.org);
  for (const tenant of tenants) {
    const { body } = await api<{ sessions: SessionRow[] }>(
      base,
      `/v1/admin/tenants/${encodeURIComponent(tenant)}/sessions`,
      { token },
    );
    write(io.stdout, `${tenant}: ${body.sessions.length} session(s)`);
    for (const s of body.sessions)
      write(
        io.stdout,
        `  ${s.uid}  ${s.sessionId}  ${s.revision} message(s)  ${new Date(s.updatedAt).toISOString()}`,
      );
  }
  return 0;
}

/** One line per trail event, in order: what happened, never payloads. */
export function describeEvent(e: AuditRecord): string {
  switch (e.trail) {
    case "lifecycle":
      return `${e.action}${e.step !== undefined ? ` step ${e.step}` : ""}${e.contextVersion !== undefined ? ` context v${e.contextVersion}` : ""}${e.messageRevision !== undefined ? ` revision ${e.messageRevision}` : ""}${e.detail ? ` ${e.detail}` : ""}`;
    case "routing":
      return e.servedTier
        ? `${e.kind} served at ${e.servedTier} by ${e.model}`
        : `${e.kind} ${e.tier}/${e.sensitivity} → ${e.clientId} ${e.model}`;
    case "cost":
      return `${e.model} $${microsToUsd(e.usdMicros)}${e.capsCrossed.length ? ` crossed ${e.capsCrossed.join(",")}` : ""}${e.refused ? ` refused (${e.refused.reason})` : ""}`;
    case "policy":
      return `${e.action} ${e.tool}${e.authorization ? ` ${e.authorization.action}:${e.authorization.subject}` : ""}${e.decision ? ` → ${e.decision}` : ""}${e.by ? ` by ${e.by}` : ""}${e.reason ? ` (${e.reason})` : ""}`;
    case "access":
      return `${e.action} ${e.resource} by ${e.tool}`;
    case "context":
      return `step ${e.step} ${e.field} ${e.decision}`;
    case "recall":
      return `${e.source} ${e.items} item(s)${e.estimatedTokens !== undefined ? ` ~${e.estimatedTokens} tokens` : ""}${e.degradedTiers?.length ? ` degraded (${e.degradedTiers.join(",")})` : ""}`;
  }
}

export async function trailsCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const rootKey = args.positional[0];
  if (!rootKey) throw new CliError("alma trails needs a root key (see --help)");
  const base = baseUrl(args, io);
  const query = new URLSearchParams();
  const org = flag(args, "org");
  const uid = flag(args, "uid");
  if (org) query.set("org", org);
  if (uid) query.set("uid", uid);
  const qs = query.size > 0 ? `?${query}` : "";
  const { body } = await api<{
    org: string;
    uid: string;
    sessionId: string;
    outcome: { status: string } | null;
    uncertain: { cause: string } | null;
    events: AuditRecord[];
  }>(base, `/v1/admin/turns/${encodeURIComponent(rootKey)}${qs}`, { token: adminToken(args, io) });
  write(
    io.stdout,
    `turn ${rootKey} · ${body.org}/${body.uid} · session ${body.sessionId} · ${body.outcome?.status ?? "no outcome"}${body.uncertain ? ` · cause ${body.uncertain.cause}` : ""}`,
  );
  for (const e of body.events)
    write(
      io.stdout,
      `${new Date(e.at).toISOString().slice(11, 23)}  ${e.trail.padEnd(9)}  ${describeEvent(e)}`,
    );
  return 0;
}

export async function eraseCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const sessionId = flag(args, "session");
  if (!sessionId) throw new CliError("alma erase needs --session ID (see --help)");
  const base = baseUrl(args, io);
  const { token } = await tenantToken(args, io);
  await api(base, `/v1/sessions/${encodeURIComponent(sessionId)}`, { token, method: "DELETE" });
  write(io.stdout, `erased session ${sessionId}`);
  return 0;
}

export async function tokenCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const org = flag(args, "org");
  const uid = flag(args, "uid");
  if (!org || !uid) throw new CliError("alma token needs --org and --uid (see --help)");
  const ttl = flag(args, "ttl");
  const ttlSeconds = ttl === undefined ? undefined : Number(ttl);
  if (ttlSeconds !== undefined && (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 60))
    throw new CliError("--ttl must be a whole number of seconds, at least 60");
  const secrets = await cliSecrets(args, io);
  const { token } = await mintToken(
    secrets.jwtSecret,
    { org, uid },
    ttlSeconds ? { ttlSeconds } : {},
  );
  write(io.stdout, token);
  return 0;
}

export async function migrateCommand(_args: ParsedArgs, io: CliIo): Promise<number> {
  const env = readEnv(io.env, io.cwd);
  write(io.stdout, await migrateStore(env));
  return 0;
}
