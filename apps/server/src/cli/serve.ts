import { type HostEnv, readEnv } from "../config/env.js";
import { readHostConfig } from "../config/file.js";
import { loadSecrets } from "../config/secrets.js";
import { createHost, type Host } from "../host.js";
import { selectModels } from "../models/select.js";
import type { StoreInfo } from "../runtime.js";
import { flag, type ParsedArgs } from "./args.js";
import { type CliIo, write } from "./context.js";

export const SERVE_HELP = `alma serve: serve the clinic agent over HTTP and SSE, with the operator console.

Usage: alma serve [--port N] [--host ADDRESS] [--quiet]
  --port   default $PORT or 8787 (0 picks a free port)
  --host   default $HOST or 127.0.0.1
  --quiet  no access log
Environment: ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY or ALMA_OPENAI_COMPAT_URL pick a
provider (else the offline demo model); ALMA_PROVIDER forces one; ALMA_MODEL_FAST/BALANCED/DEEP
override the models; ALMA_HOME (default ./.alma) holds the store and the dev secrets;
ALMA_DATABASE_URL=postgres://… switches to PostgreSQL; ALMA_CAP_TURN_USD and
ALMA_CAP_CLINIC_DAY_USD set the caps; ALMA_JWT_SECRET and ALMA_ADMIN_TOKEN override the secrets;
ALMA_HEADERS_TIMEOUT_MS (10000), ALMA_REQUEST_TIMEOUT_MS (30000), ALMA_KEEPALIVE_TIMEOUT_MS (5000)
and ALMA_MAX_CONNECTIONS (256) bound the sockets; ALMA_TURNS_PER_TENANT (64) bounds the turns
one tenant runs at once; ALMA_ALLOWED_HOSTS (* or names; default the
localhost names on loopback) checks the Host header; ALMA_SHUTDOWN_GRACE_MS (10000) is how long
running turns get on SIGTERM/SIGINT; ALMA_CONFIG (default ./alma.config.json, when it exists) is the
configuration file, whose "mcp" section names MCP servers per tenant.`;

/** Where a secret is, never what it is. */
function whereIs(source: string, variable: string): string {
  return source === "environment" ? `in $${variable}` : `in ${source.replace(/ \(created\)$/, "")}`;
}

/**
 * What an internal error may print: its kind and its stack frames, not its message (a message can
 * quote a session id or a key). The operator reproduces with the frames; the client saw "internal".
 */
export function errorForLog(error: unknown): string {
  if (!(error instanceof Error)) return "a non-Error value was thrown";
  const code =
    typeof (error as { code?: unknown }).code === "string"
      ? ` (${(error as unknown as { code: string }).code})`
      : "";
  const frames = (error.stack ?? "").split("\n").filter((line) => /^\s+at /.test(line));
  return [`${error.name}${code}`, ...frames].join("\n");
}

function banner(io: CliIo, env: HostEnv, host: Host, url: string, store: StoreInfo): void {
  const ctx = host.context;
  const m = ctx.models;
  const out = (name: string, text: string) => write(io.stdout, `  ${name.padEnd(8)} ${text}`);
  write(io.stdout, `Alma clinic front desk: ${url}`);
  // The banner says where the operator token is, never what it is (a terminal's scrollback and a
  // process supervisor's log keep it); the console takes it in the link's fragment or pasted.
  out(
    "console",
    `${url}/#admin=<operator token>   (the operator token is ${whereIs(ctx.secrets.source.admin, "ALMA_ADMIN_TOKEN")})`,
  );
  out(
    "model",
    m.offlineDemo
      ? "offline demo model: a fixed script, not an AI (set ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY or ALMA_OPENAI_COMPAT_URL for a real one)"
      : m.label,
  );
  out(
    "tiers",
    Object.entries(m.tiers)
      .map(([tier, model]) => `${tier} → ${model}`)
      .join(", "),
  );
  out("store", `${store.kind}: ${store.location}${store.note ? ` (${store.note})` : ""}`);
  out(
    "tenants",
    ctx.desk
      .clinics()
      .map((c) => `${c.org} (${c.name}; patients ${c.patients.map((p) => p.id).join(", ")})`)
      .join("; "),
  );
  out(
    "caps",
    `$${ctx.caps.perTurnUsd} per turn, $${ctx.caps.perClinicDayUsd} per clinic per day (block)`,
  );
  out(
    "token",
    "npx alma token --org sunrise-clinic --uid p-1001   (then: Authorization: Bearer <token>)",
  );
  out("chat", "npx alma chat   (as p-1001 at sunrise-clinic; --org/--uid for someone else)");
  out(
    "secrets",
    `JWT secret ${whereIs(ctx.secrets.source.jwt, "ALMA_JWT_SECRET")}; operator token ${whereIs(ctx.secrets.source.admin, "ALMA_ADMIN_TOKEN")}; trail key ${ctx.secrets.source.trail ? whereIs(ctx.secrets.source.trail, "ALMA_TRAIL_KEY") : "beside the database"}`,
  );
  if (ctx.mcp) {
    out(
      "mcp",
      `${ctx.mcp.tools.length} tools (deferred) from the configuration file; ${ctx.mcp.revision}`,
    );
    for (const p of ctx.mcp.problems)
      out(
        "mcp",
        `left out: ${p.kind} ${p.server}${p.org ? ` for ${p.org}` : ""}${p.tool ? ` ${p.tool}` : ""}: ${p.detail}`,
      );
  }
  out(
    "limits",
    `headers ${env.limits.headersTimeoutMs} ms, request ${env.limits.requestTimeoutMs} ms, ${env.limits.maxConnections} connections, ${env.turnsPerTenant} turns per tenant at once; shutdown grace ${env.shutdownGraceMs} ms`,
  );
}

/** Starts the host and serves until `io.stopSignal` resolves (SIGINT/SIGTERM from `main`). */
export async function serveCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const env = readEnv(
    {
      ...io.env,
      ...(flag(args, "port") ? { PORT: flag(args, "port") } : {}),
      ...(flag(args, "host") ? { HOST: flag(args, "host") } : {}),
    },
    io.cwd,
  );
  const file = readHostConfig(io.env, io.cwd);
  const models = await selectModels(env);
  const secrets = loadSecrets(env.home, env);
  const quiet = args.flags.has("quiet");
  const host = await createHost({
    models,
    secrets,
    store: env,
    caps: env.caps,
    // The route's pattern, never the path: no session id, key or token reaches the log.
    ...(quiet
      ? {}
      : { log: (l) => write(io.stdout, `${l.method} ${l.route} ${l.status} ${l.ms}ms`) }),
    onError: (error) => write(io.stderr, `internal error: ${errorForLog(error)}`),
    limits: env.limits,
    turnsPerTenant: env.turnsPerTenant,
    ...(env.allowedHosts ? { allowedHosts: env.allowedHosts } : {}),
    shutdownGraceMs: env.shutdownGraceMs,
    // The patient memory (recall and extraction) is on unless ALMA_MEMORY=off.
    memory: io.env.ALMA_MEMORY !== "off",
    triage: env.triage,
    ...(file.mcp ? { mcp: file.mcp } : {}),
  });
  const { url } = await host.listen(env.port, env.host);
  banner(io, env, host, url, host.context.store);
  if (env.healthPort !== undefined) {
    const health = await host.listenHealth(env.healthPort, env.host);
    write(
      io.stdout,
      `  ${"health".padEnd(8)} ${health.url}/healthz   (ALMA_HEALTH_PORT: /healthz alone)`,
    );
  }
  const stop = host.startMaintenance(env.maintainEveryMs, (error) =>
    write(io.stderr, `maintenance failed: ${errorForLog(error)}`),
  );
  host.startRoutines(env.routinesEveryMs, (error) =>
    write(io.stderr, `routine tick failed: ${errorForLog(error)}`),
  );
  await (io.stopSignal ?? new Promise<void>(() => undefined));
  stop();
  write(io.stdout, `stopping: no new turns; running turns get up to ${env.shutdownGraceMs} ms`);
  const report = await host.close(env.shutdownGraceMs);
  write(
    io.stdout,
    `stopped (${report.asksDenied} pending asks denied by shutdown, ${report.turnsCancelled} turns cancelled after the grace period)`,
  );
  return 0;
}
