import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import type { ExpiredRelease } from "@alma-harness/conversation";
import { type Clock, type IdSource, randomIds, systemClock } from "@alma-harness/core";
import { BOOK_TOOL, clinicAgent, FRONT_DESK_INTENT } from "./agent/agent.js";
import { CLINICS, type Clinic, ClinicDesk } from "./agent/clinics.js";
import type { HostSecrets } from "./config/secrets.js";
import type { McpConfig } from "@alma-harness/mcp";
import { type AccessLog, createApp, type Handle } from "./http/app.js";
import { DEFAULT_BODY_LIMIT } from "./http/body.js";
import { type HostTracing, tracedHandle } from "./http/tracing.js";
import {
  type AllowedHosts,
  boundedServer,
  checkServerLimits,
  connectionCap,
  DEFAULT_SERVER_LIMITS,
  defaultAllowedHosts,
  type ServerLimits,
} from "./http/hardening.js";
import type { HostContext, HttpSettings } from "./http/context.js";
import { MAX_PREFER_WAIT_S } from "./http/prefer.js";
import { DEFAULT_PING_MS } from "./http/sse.js";
import type { ModelSetup } from "./models/select.js";
import { LoopBudget } from "./loop-budget.js";
import { withMcp } from "./mcp.js";
import { nodeListener } from "./node-adapter.js";
import { PermissionDesk } from "./permissions.js";
import { hostRoutines, nightlyJobs } from "./routines/nightly.js";
import { openRuntime, type StoreEnv } from "./runtime.js";
import { Shutdown } from "./shutdown.js";
import { DEFAULT_TURNS_PER_TENANT, TurnLimit } from "./turn-limit.js";
import { Directory, LiveTurns } from "./turns.js";

export const DEFAULT_PUBLIC_DIR = fileURLToPath(new URL("../public", import.meta.url));

export interface HostOptions {
  readonly models: ModelSetup;
  readonly secrets: HostSecrets;
  readonly store: StoreEnv;
  readonly caps?: { readonly perTurnUsd: number; readonly perClinicDayUsd: number };
  readonly clinics?: readonly Clinic[];
  readonly http?: Partial<HttpSettings>;
  readonly clock?: Clock;
  readonly ids?: IdSource;
  readonly permissionTimeoutMs?: number;
  /** How long a parked ask waits for the operator; default one hour (the runner's). */
  readonly approvalTtlMs?: number;
  readonly log?: AccessLog;
  readonly onError?: (error: unknown) => void;
  /** Socket timeouts and the connection cap (`DEFAULT_SERVER_LIMITS` for what is not given). */
  readonly limits?: Partial<ServerLimits>;
  /** The Host names served; default from the first address `listen` binds (`defaultAllowedHosts`). */
  readonly allowedHosts?: AllowedHosts;
  /** How long `close` lets running turns settle before cancelling them (default 10 s). */
  readonly shutdownGraceMs?: number;
  /** The patient memory (recall and extraction over the runtime's memory stores); off, the agent forgets between sessions. */
  readonly memory?: boolean;
  /** Classify each incoming message with the triage single call before its turn (default off; `ALMA_TRIAGE=on`). */
  readonly triage?: boolean;
  /** Turns one tenant runs at once in this process; one more is `429 too_many_turns` (default 64). */
  readonly turnsPerTenant?: number;
  /** MCP servers whose tools the agent gets, per tenant (the configuration file's `mcp` section). */
  readonly mcp?: McpConfig;
  /**
   * The tools whose parked asks the person in a `useChat` front end decides (`/v1/ui/chat`: a tool
   * approval request with the call's arguments); default none, every ask is the operator's.
   */
  readonly uiApprovals?: readonly string[];
  /** OpenTelemetry spans from the trails, each request in its `traceparent`'s context (default off). */
  readonly tracing?: HostTracing;
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/** Connections the health listener serves at once (a check is one short request). */
const HEALTH_CONNECTIONS = 64;

/** What `close` saw: asks it denied, and turns still running when the grace period ended (then cancelled). */
export interface CloseReport {
  readonly asksDenied: number;
  readonly turnsCancelled: number;
}

export interface Host {
  readonly handle: Handle;
  readonly context: HostContext;
  /** Serves on `port` (0 picks one) and resolves with the bound address. */
  listen(
    port: number,
    hostname: string,
  ): Promise<{ readonly url: string; readonly server: Server }>;
  /**
   * Serves `/healthz` alone on a listener of its own (`ALMA_HEALTH_PORT`), for a load balancer's
   * check. Node 20's libuv accepts one connection per event-loop iteration, so under a burst of
   * connections a check on a fresh connection to the main port waits behind the burst in the
   * kernel's queue (seconds, `npm run bench:load`); this listener's queue holds only checks. Any
   * other path there is 404. Its own connection cap (64) and the same socket timeouts.
   */
  listenHealth(
    port: number,
    hostname: string,
  ): Promise<{ readonly url: string; readonly server: Server }>;
  /** Runs the runtime's maintenance now (also what the timer runs). */
  maintain(): Promise<{ readonly released: readonly ExpiredRelease[]; readonly fenced: number }>;
  /** Starts the maintenance timer; returns its stop function. */
  startMaintenance(everyMs: number, onError?: (error: unknown) => void): () => void;
  /** Starts the routines' scheduler tick every `everyMs`; graceful shutdown stops it (a tick in progress gets the grace period). */
  startRoutines(everyMs: number, onError?: (error: unknown) => void): void;
  /** Resolves once no turn is running. */
  idle(): Promise<void>;
  /**
   * Graceful shutdown: stops admitting (new turns and event batches answer 503 `shutting_down`) and
   * accepting connections, denies every pending permission ask (fail closed: their turns settle and
   * free their sessions at once), gives running turns up to `graceMs` (default `shutdownGraceMs`) to
   * settle, cancels any still running through their execution signal, then closes every connection
   * and the runtime. Never takes much longer than the grace period.
   */
  close(graceMs?: number): Promise<CloseReport>;
}

/** The host's parts around the runtime: the clinic desk, the permission desk, the directory. */
async function assemble(options: HostOptions): Promise<HostContext> {
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const clinics = options.clinics ?? CLINICS;
  const caps = options.caps ?? { perTurnUsd: 0.25, perClinicDayUsd: 2 };
  // Checked before the runtime opens: a bad setting leaves nothing open.
  const turnLimit = new TurnLimit(options.turnsPerTenant ?? DEFAULT_TURNS_PER_TENANT);
  const desk = new ClinicDesk(clinics, () => clock.now());
  const turns = new LiveTurns();
  const directory = new Directory(
    Object.fromEntries(clinics.map((c) => [c.org, c.patients.map((p) => p.id)])),
  );
  const asks = new PermissionDesk(
    turns,
    ids,
    () => clock.now(),
    new Set([BOOK_TOOL]),
    () => clinics.map((c) => c.org),
  );
  const agent = clinicAgent({
    models: options.models,
    desk,
    owner: (turnId) => turns.owner(turnId),
    permissions: asks,
    caps,
    onUncertainTurn: (event) => directory.uncertain(event, clock.now()),
    aroundResume: (turn, run) =>
      turns.run(turn.rootKey, turn.scope, turn.sessionId, clock.now(), run as never),
    ...(options.approvalTtlMs ? { approvalTtlMs: options.approvalTtlMs } : {}),
    clock,
    ids,
    ...(options.permissionTimeoutMs ? { permissionTimeoutMs: options.permissionTimeoutMs } : {}),
    ...(options.memory ? { memory: options.memory } : {}),
  });
  const { config, hub } = await withMcp(agent, options.mcp, turns, asks);
  const spans = options.tracing?.spans;
  const { runtime, store } = await openRuntime(options.store, {
    ...config,
    ...(options.secrets.trailKey ? { trailKey: options.secrets.trailKey } : {}),
    ...(spans ? { onTrail: (event) => spans.observe(event) } : {}),
  });
  asks.attach(runtime.runner);
  return {
    runtime,
    turns,
    asks,
    directory,
    desk,
    models: options.models,
    store,
    secrets: options.secrets,
    caps,
    intent: FRONT_DESK_INTENT,
    triage: options.triage === true,
    ui: { approvals: new Set(options.uiApprovals ?? []) },
    clock,
    shutdown: new Shutdown(),
    turnLimit,
    loop: new LoopBudget(),
    ...(hub ? { mcp: hub } : {}),
    routines: await hostRoutines(
      runtime,
      clinics,
      clock,
      nightlyJobs(runtime, options.models, config.caps, desk, clock),
    ),
    http: {
      bodyLimit: DEFAULT_BODY_LIMIT,
      waitMs: 25_000,
      maxWaitMs: MAX_PREFER_WAIT_S * 1000,
      pingMs: DEFAULT_PING_MS,
      publicDir: DEFAULT_PUBLIC_DIR,
      ...options.http,
    },
  };
}

async function listenOn(
  server: Server,
  port: number,
  hostname: string,
  backlog: number,
): Promise<string> {
  server.listen({ port, host: hostname, backlog });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}

/** One maintenance run per tick at most: a slow run is never stacked on by the next tick. */
function maintenanceTimer(
  runtime: HostContext["runtime"],
  everyMs: number,
  onError?: (error: unknown) => void,
): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    runtime
      .maintain()
      .catch((error: unknown) => onError?.(error))
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Resolves when `promise` settles or `ms` passes, whichever is first; the timer never outlives it. */
async function boundedWait(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  try {
    await Promise.race([promise.then(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** After the grace period, how long cancelled turns get to record their ending before the runtime closes. */
const CANCEL_SETTLE_MS = 2_000;

/** Assembles the host and its HTTP core; `listen` serves it through the Node adapter. */
export async function createHost(options: HostOptions): Promise<Host> {
  const context = await assemble(options);
  const { runtime, turns, shutdown } = context;
  const limits = checkServerLimits({ ...DEFAULT_SERVER_LIMITS, ...options.limits });
  let allowed: AllowedHosts | undefined = options.allowedHosts;
  const app = createApp(context, {
    ...(options.log ? { log: options.log } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
    allowedHosts: () => allowed ?? "any",
  });
  const handle = options.tracing ? tracedHandle(app) : app;
  const servers: Server[] = [];
  let closing: Promise<CloseReport> | undefined;
  const close = async (graceMs: number): Promise<CloseReport> => {
    shutdown.begin();
    const closed = servers.map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    for (const server of servers) server.closeIdleConnections();
    const asksDenied = context.asks.close();
    // No new routine tick starts; one in progress shares the grace period with the turns.
    await boundedWait(Promise.all([turns.idle(), context.routines.stop()]), graceMs);
    const turnsCancelled = turns.size;
    if (turnsCancelled > 0) {
      shutdown.abortTurns();
      await boundedWait(turns.idle(), CANCEL_SETTLE_MS);
    }
    // The settled turns' answers are still being written: let each connection finish its response,
    // closing every one that falls idle, for a moment; then cut what is left.
    const drained = Promise.all(closed);
    const sweep = setInterval(() => {
      for (const server of servers) server.closeIdleConnections();
    }, 25);
    await boundedWait(drained, CANCEL_SETTLE_MS);
    clearInterval(sweep);
    for (const server of servers) server.closeAllConnections();
    await drained;
    await runtime.close();
    await context.mcp?.close();
    options.tracing?.spans.close((options.clock ?? systemClock).now());
    return { asksDenied, turnsCancelled };
  };
  return {
    handle,
    context,
    async listen(port, hostname) {
      allowed ??= defaultAllowedHosts(hostname);
      const cap = connectionCap(limits);
      const server = boundedServer(nodeListener(handle, cap, context.loop), limits, cap);
      servers.push(server);
      return { url: await listenOn(server, port, hostname, limits.listenBacklog), server };
    },
    async listenHealth(port, hostname) {
      allowed ??= defaultAllowedHosts(hostname);
      const healthLimits = { ...limits, maxConnections: HEALTH_CONNECTIONS };
      const cap = connectionCap(healthLimits);
      const server = boundedServer(nodeListener(handle, cap, undefined, true), healthLimits, cap);
      servers.push(server);
      return { url: await listenOn(server, port, hostname, limits.listenBacklog), server };
    },
    maintain: () => runtime.maintain(),
    startMaintenance: (everyMs, onError) => maintenanceTimer(runtime, everyMs, onError),
    startRoutines: (everyMs, onError) => context.routines.start(everyMs, onError),
    idle: () => turns.idle(),
    close(graceMs = options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS) {
      closing ??= close(graceMs);
      return closing;
    },
  };
}
