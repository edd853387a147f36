import { type HostEnv, readEnv } from "../config/env.js";
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
ALMA_CAP_CLINIC_DAY_USD set the caps; ALMA_JWT_SECRET and ALMA_ADMIN_TOKEN override the secrets.`;

function isLoopback(host: string): boolean {
  return host === "127.0.0.1" || host === "localhost" || host === "::1";
}

function banner(io: CliIo, env: HostEnv, host: Host, url: string, store: StoreInfo): void {
  const ctx = host.context;
  const m = ctx.models;
  const out = (name: string, text: string) => write(io.stdout, `  ${name.padEnd(8)} ${text}`);
  write(io.stdout, `Alma clinic front desk: ${url}`);
  // On loopback the console link carries the operator token in its fragment (never sent to the server).
  out("console", isLoopback(env.host) ? `${url}/#admin=${ctx.secrets.adminToken}` : `${url}/ (operator token: ${ctx.secrets.source.admin})`);
  out("model", m.offlineDemo ? "offline demo model: a fixed script, not an AI (set ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY or ALMA_OPENAI_COMPAT_URL for a real one)" : m.label);
  out("tiers", Object.entries(m.tiers).map(([tier, model]) => `${tier} → ${model}`).join(", "));
  out("store", `${store.kind}: ${store.location}${store.note ? ` (${store.note})` : ""}`);
  out("tenants", ctx.desk.clinics().map((c) => `${c.org} (${c.name}; patients ${c.patients.map((p) => p.id).join(", ")})`).join("; "));
  out("caps", `$${ctx.caps.perTurnUsd} per turn, $${ctx.caps.perClinicDayUsd} per clinic per day (block)`);
  out("token", "npx alma token --org sunrise-clinic --uid p-1001   (then: Authorization: Bearer <token>)");
  out("chat", "npx alma chat   (as p-1001 at sunrise-clinic; --org/--uid for someone else)");
  out("secrets", `JWT secret ${ctx.secrets.source.jwt}; operator token ${ctx.secrets.source.admin}; trail key ${ctx.secrets.source.trail ?? "beside the database"}`);
}

/** Starts the host and serves until `io.stopSignal` resolves (SIGINT/SIGTERM from `main`). */
export async function serveCommand(args: ParsedArgs, io: CliIo): Promise<number> {
  const env = readEnv({ ...io.env, ...(flag(args, "port") ? { PORT: flag(args, "port") } : {}), ...(flag(args, "host") ? { HOST: flag(args, "host") } : {}) }, io.cwd);
  const models = await selectModels(env);
  const secrets = loadSecrets(env.home, env);
  const quiet = args.flags.has("quiet");
  const host = await createHost({
    models,
    secrets,
    store: env,
    caps: env.caps,
    ...(quiet ? {} : { log: (l) => write(io.stdout, `${l.method} ${l.path} ${l.status} ${l.ms}ms`) }),
    onError: (error) => write(io.stderr, `internal error: ${(error as Error)?.stack ?? String(error)}`),
  });
  const { url } = await host.listen(env.port, env.host);
  banner(io, env, host, url, host.context.store);
  const stop = host.startMaintenance(env.maintainEveryMs, (error) => write(io.stderr, `maintenance failed: ${(error as Error).message}`));
  await (io.stopSignal ?? new Promise<void>(() => undefined));
  stop();
  write(io.stdout, "stopping…");
  await host.close();
  return 0;
}
