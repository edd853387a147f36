import {
  type AllowedHosts,
  DEFAULT_SERVER_LIMITS,
  parseAllowedHosts,
  type ServerLimits,
} from "../http/hardening.js";
import { DEFAULT_TURNS_PER_TENANT } from "../turn-limit.js";
import { findHome } from "./home.js";

/** Which model family the host routes to; `demo` is the offline scripted model. */
export type ProviderName = "demo" | "anthropic" | "openai" | "openrouter" | "compat";

/**
 * Everything the host reads from its environment, read once at start. Secrets are not here:
 * `secrets.ts` loads them (from the environment or from files under `home`).
 */
export interface HostEnv {
  readonly host: string;
  readonly port: number;
  /** `ALMA_HEALTH_PORT`: a listener serving `/healthz` alone (`Host.listenHealth`); absent: none. */
  readonly healthPort?: number;
  /** The host's own directory: store files, the dev JWT secret, the admin token (`findHome`). */
  readonly home: string;
  /** `postgres://…` switches the store to PostgreSQL. */
  readonly databaseUrl: string | undefined;
  readonly provider: ProviderName;
  readonly keys: {
    readonly anthropic?: string;
    readonly openai?: string;
    readonly openrouter?: string;
    readonly compatUrl?: string;
    readonly compatKey?: string;
  };
  /** Per-tier model overrides (`ALMA_MODEL_FAST` …). */
  readonly models: { readonly fast?: string; readonly balanced?: string; readonly deep?: string };
  /** `input,output` USD per million tokens for an OpenAI-compatible server; default free (local). */
  readonly compatPrice: string | undefined;
  /** The OpenAI-compatible server's model for every tier (`ALMA_OPENAI_COMPAT_MODEL`). */
  readonly compatModel: string | undefined;
  readonly caps: { readonly perTurnUsd: number; readonly perClinicDayUsd: number };
  readonly maintainEveryMs: number;
  /** How often the routines' scheduler ticks (`ALMA_ROUTINES_MS`, default one minute). */
  readonly routinesEveryMs: number;
  /** Socket timeouts and the connection cap (`ALMA_HEADERS_TIMEOUT_MS`, `ALMA_REQUEST_TIMEOUT_MS`, `ALMA_KEEPALIVE_TIMEOUT_MS`, `ALMA_MAX_CONNECTIONS`, `ALMA_LISTEN_BACKLOG`). */
  readonly limits: ServerLimits;
  /** `ALMA_TURNS_PER_TENANT`: turns one tenant runs at once in this process (default 64). */
  readonly turnsPerTenant: number;
  /** `ALMA_ALLOWED_HOSTS` (`*` or names); absent: the default for the bind address. */
  readonly allowedHosts: AllowedHosts | undefined;
  /** `ALMA_SHUTDOWN_GRACE_MS`: how long running turns get on SIGTERM/SIGINT (default 10 s). */
  readonly shutdownGraceMs: number;
  /** `ALMA_TRIAGE=on`: classify each incoming message with the triage single call before its turn. */
  readonly triage: boolean;
  readonly jwtSecret: string | undefined;
  readonly adminToken: string | undefined;
  /** The trail key (`ALMA_TRAIL_KEY`, at least 32 bytes); else the `trail-key` file under `home`. */
  readonly trailKey?: string | undefined;
}

export class EnvError extends Error {
  override readonly name = "EnvError";
}

function int(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min || value > max)
    throw new EnvError(`${name} must be an integer ${min}-${max}`);
  return value;
}

function usd(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || Math.round(value * 1e6) / 1e6 !== value)
    throw new EnvError(`${name} must be a non-negative USD amount with at most six decimals`);
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

const PROVIDERS: readonly ProviderName[] = ["demo", "anthropic", "openai", "openrouter", "compat"];

/** The provider: forced by `ALMA_PROVIDER`, else the first whose key is set, else the offline demo. */
export function pickProvider(env: NodeJS.ProcessEnv): ProviderName {
  const forced = nonEmpty(env.ALMA_PROVIDER);
  if (forced !== undefined) {
    if (!(PROVIDERS as readonly string[]).includes(forced))
      throw new EnvError(`ALMA_PROVIDER must be one of ${PROVIDERS.join(", ")}`);
    return forced as ProviderName;
  }
  if (nonEmpty(env.ANTHROPIC_API_KEY)) return "anthropic";
  if (nonEmpty(env.OPENAI_API_KEY)) return "openai";
  if (nonEmpty(env.OPENROUTER_API_KEY)) return "openrouter";
  if (nonEmpty(env.ALMA_OPENAI_COMPAT_URL)) return "compat";
  return "demo";
}

function serverLimits(env: NodeJS.ProcessEnv): ServerLimits {
  const d = DEFAULT_SERVER_LIMITS;
  const limits = {
    headersTimeoutMs: int(env, "ALMA_HEADERS_TIMEOUT_MS", d.headersTimeoutMs, 100, 600_000),
    requestTimeoutMs: int(env, "ALMA_REQUEST_TIMEOUT_MS", d.requestTimeoutMs, 100, 3_600_000),
    keepAliveTimeoutMs: int(env, "ALMA_KEEPALIVE_TIMEOUT_MS", d.keepAliveTimeoutMs, 100, 600_000),
    maxConnections: int(env, "ALMA_MAX_CONNECTIONS", d.maxConnections, 1, 100_000),
    checkEveryMs: d.checkEveryMs,
    listenBacklog: int(env, "ALMA_LISTEN_BACKLOG", d.listenBacklog, 1, 65_535),
  };
  if (limits.headersTimeoutMs > limits.requestTimeoutMs)
    throw new EnvError("ALMA_HEADERS_TIMEOUT_MS must not exceed ALMA_REQUEST_TIMEOUT_MS");
  return limits;
}

/** Reads and validates the environment; throws `EnvError` with one line naming the variable. */
export function readEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): HostEnv {
  const host = nonEmpty(env.HOST) ?? "127.0.0.1";
  return {
    host,
    port: int(env, "PORT", 8787, 0, 65535),
    ...(nonEmpty(env.ALMA_HEALTH_PORT)
      ? { healthPort: int(env, "ALMA_HEALTH_PORT", 0, 0, 65535) }
      : {}),
    home: findHome(nonEmpty(env.ALMA_HOME), cwd),
    databaseUrl: nonEmpty(env.ALMA_DATABASE_URL),
    provider: pickProvider(env),
    keys: {
      ...(nonEmpty(env.ANTHROPIC_API_KEY) ? { anthropic: nonEmpty(env.ANTHROPIC_API_KEY) } : {}),
      ...(nonEmpty(env.OPENAI_API_KEY) ? { openai: nonEmpty(env.OPENAI_API_KEY) } : {}),
      ...(nonEmpty(env.OPENROUTER_API_KEY) ? { openrouter: nonEmpty(env.OPENROUTER_API_KEY) } : {}),
      ...(nonEmpty(env.ALMA_OPENAI_COMPAT_URL)
        ? { compatUrl: nonEmpty(env.ALMA_OPENAI_COMPAT_URL) }
        : {}),
      ...(nonEmpty(env.ALMA_OPENAI_COMPAT_KEY)
        ? { compatKey: nonEmpty(env.ALMA_OPENAI_COMPAT_KEY) }
        : {}),
    },
    models: {
      ...(nonEmpty(env.ALMA_MODEL_FAST) ? { fast: nonEmpty(env.ALMA_MODEL_FAST) } : {}),
      ...(nonEmpty(env.ALMA_MODEL_BALANCED) ? { balanced: nonEmpty(env.ALMA_MODEL_BALANCED) } : {}),
      ...(nonEmpty(env.ALMA_MODEL_DEEP) ? { deep: nonEmpty(env.ALMA_MODEL_DEEP) } : {}),
    },
    compatPrice: nonEmpty(env.ALMA_OPENAI_COMPAT_PRICE),
    compatModel: nonEmpty(env.ALMA_OPENAI_COMPAT_MODEL),
    caps: {
      perTurnUsd: usd(env, "ALMA_CAP_TURN_USD", 0.25),
      perClinicDayUsd: usd(env, "ALMA_CAP_CLINIC_DAY_USD", 2),
    },
    maintainEveryMs: int(env, "ALMA_MAINTAIN_MS", 60_000, 1_000, 86_400_000),
    routinesEveryMs: int(env, "ALMA_ROUTINES_MS", 60_000, 1_000, 86_400_000),
    limits: serverLimits(env),
    turnsPerTenant: int(env, "ALMA_TURNS_PER_TENANT", DEFAULT_TURNS_PER_TENANT, 1, 100_000),
    allowedHosts:
      nonEmpty(env.ALMA_ALLOWED_HOSTS) === undefined
        ? undefined
        : parseAllowedHosts(env.ALMA_ALLOWED_HOSTS as string),
    shutdownGraceMs: int(env, "ALMA_SHUTDOWN_GRACE_MS", 10_000, 0, 600_000),
    triage: nonEmpty(env.ALMA_TRIAGE) === "on",
    jwtSecret: nonEmpty(env.ALMA_JWT_SECRET),
    adminToken: nonEmpty(env.ALMA_ADMIN_TOKEN),
    trailKey: nonEmpty(env.ALMA_TRAIL_KEY),
  };
}
