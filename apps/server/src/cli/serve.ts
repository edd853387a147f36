import { readEnv } from "../config/env.js";
import { readHostConfig } from "../config/file.js";
import { loadSecrets } from "../config/secrets.js";
import { createHost } from "../host.js";
import { selectModels } from "../models/select.js";
import { errorFields, hostLogger, logLevel } from "../log.js";
import { flag, type ParsedArgs } from "./args.js";
import { banner, listeningFields } from "./banner.js";
import type { CliIo } from "./context.js";

export const SERVE_HELP = `alma serve: serve the clinic agent over HTTP and SSE, with the operator console.

Usage: alma serve [--port N] [--host ADDRESS] [--quiet]
  --port   default $PORT or 8787 (0 picks a free port)
  --host   default $HOST or 127.0.0.1
  --quiet  no access log (the log level stays ALMA_LOG_LEVEL's)
Logs are JSON lines on stdout (pino; ALMA_LOG_LEVEL: info by default) carrying no content; on a
terminal the start-up text comes first.
Environment: ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY or ALMA_OPENAI_COMPAT_URL pick a
provider (else the offline demo model); ALMA_PROVIDER forces one; ALMA_MODEL_FAST/BALANCED/DEEP
override the models; ALMA_HOME (default: the nearest .alma/ up from here, else ./.alma) holds
the store and the dev secrets; ALMA_DATABASE_URL=postgres://… switches to PostgreSQL; ALMA_CAP_TURN_USD and
ALMA_CAP_CLINIC_DAY_USD set the caps; ALMA_JWT_SECRET and ALMA_ADMIN_TOKEN override the secrets;
ALMA_HEADERS_TIMEOUT_MS (10000), ALMA_REQUEST_TIMEOUT_MS (30000), ALMA_KEEPALIVE_TIMEOUT_MS (5000)
and ALMA_MAX_CONNECTIONS (256) bound the sockets; ALMA_TURNS_PER_TENANT (64) bounds the turns
one tenant runs at once; ALMA_ALLOWED_HOSTS (* or names; default the
localhost names on loopback) checks the Host header; ALMA_SHUTDOWN_GRACE_MS (10000) is how long
running turns get on SIGTERM/SIGINT; ALMA_CONFIG (default ./alma.config.json, when it exists) is the
configuration file, whose "mcp" section names MCP servers per tenant.`;

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
  const log = hostLogger(io.stdout, logLevel(io.env));
  const host = await createHost({
    models,
    secrets,
    store: env,
    caps: env.caps,
    // The route's pattern, never the path: no session id, key or token reaches the log.
    ...(quiet ? {} : { log: (l) => log.info({ ...l }, "request") }),
    onError: (error) => log.error(errorFields(error), "internal error"),
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
  if (io.stdout.isTTY) banner(io, env, host, url, host.context.store);
  log.info(listeningFields(host, url, host.context.store), "listening");
  if (env.healthPort !== undefined) {
    const health = await host.listenHealth(env.healthPort, env.host);
    log.info({ url: `${health.url}/healthz` }, "health listening");
  }
  const stop = host.startMaintenance(env.maintainEveryMs, (error) =>
    log.error(errorFields(error), "maintenance failed"),
  );
  host.startRoutines(env.routinesEveryMs, (error) =>
    log.error(errorFields(error), "routine tick failed"),
  );
  await (io.stopSignal ?? new Promise<void>(() => undefined));
  stop();
  log.info({ graceMs: env.shutdownGraceMs }, "stopping");
  const report = await host.close(env.shutdownGraceMs);
  log.info({ asksDenied: report.asksDenied, turnsCancelled: report.turnsCancelled }, "stopped");
  return 0;
}
