import type { HostEnv } from "../config/env.js";
import type { Host } from "../host.js";
import type { StoreInfo } from "../runtime.js";
import { type CliIo, write } from "./context.js";

/** Where a secret is, never what it is. */
function whereIs(source: string, variable: string): string {
  return source === "environment" ? `in $${variable}` : `in ${source.replace(/ \(created\)$/, "")}`;
}

/**
 * The facts of a started host, for its `listening` log line: where it serves, which model and
 * store, where each secret is (never what it is). No content, like every log line.
 */
export function listeningFields(host: Host, url: string, store: StoreInfo) {
  const ctx = host.context;
  return {
    url,
    model: ctx.models.offlineDemo ? "offline demo" : ctx.models.label,
    tiers: ctx.models.tiers,
    store: store.kind,
    tenants: ctx.desk.clinics().map((c) => c.org),
    secrets: {
      jwt: whereIs(ctx.secrets.source.jwt, "ALMA_JWT_SECRET"),
      admin: whereIs(ctx.secrets.source.admin, "ALMA_ADMIN_TOKEN"),
    },
  };
}

/** The human start-up text, for a terminal (`alma serve` prints it when stdout is one): the login link included. */
export function banner(io: CliIo, env: HostEnv, host: Host, url: string, store: StoreInfo): void {
  const ctx = host.context;
  const m = ctx.models;
  const out = (name: string, text: string) => write(io.stdout, `  ${name.padEnd(8)} ${text}`);
  write(io.stdout, `Alma clinic front desk: ${url}`);
  // The login link, on a terminal only: a process supervisor's log (JSON lines, never this text)
  // must not keep the token; a terminal's scrollback is the operator's own. The fragment never
  // reaches the server, and the console removes it from the address bar and the history.
  out(
    "console",
    `${url}/#admin=${encodeURIComponent(ctx.secrets.adminToken)}   (npx alma console prints it again)`,
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
