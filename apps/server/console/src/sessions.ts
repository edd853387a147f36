import { getJson, type Info } from "./api.js";
import { clear, h, time } from "./dom.js";

interface SessionRow {
  readonly uid: string;
  readonly sessionId: string;
  readonly revision: number;
  readonly updatedAt: number;
}

interface TurnRow {
  readonly rootKey: string;
  readonly input: string;
  readonly reply: string;
  readonly tools: readonly string[];
}

/** An audit record as the host returns it (the fields the timeline reads). */
export interface TrailEvent {
  readonly seq: number;
  readonly trail: string;
  readonly at: number;
  readonly action?: string;
  readonly step?: number;
  readonly contextVersion?: number;
  readonly messageRevision?: number;
  readonly detail?: string;
  readonly kind?: string;
  readonly tier?: string;
  readonly sensitivity?: string;
  readonly model?: string;
  readonly clientId?: string;
  readonly servedTier?: string;
  readonly usdMicros?: number;
  readonly capsCrossed?: readonly string[];
  readonly refused?: { readonly reason: string };
  readonly tool?: string;
  readonly decision?: string;
  readonly by?: string;
  readonly rule?: string;
  readonly reason?: string;
  readonly authorization?: { readonly action: string; readonly subject: string };
  readonly resource?: string;
}

interface TurnTrails {
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly outcome: {
    readonly status: string;
    readonly terminalReason?: string;
    readonly costUsd?: string;
    readonly notice?: string;
  } | null;
  readonly uncertain: {
    readonly cause: string;
    readonly persisted: boolean | null;
    readonly released: boolean;
  } | null;
  readonly events: readonly TrailEvent[];
}

function usd(micros: number): string {
  return `$${(micros / 1e6).toFixed(6)}`;
}

/** One line of the timeline: a label and the detail people need, never payloads. */
export function describe(e: TrailEvent): { label: string; text: string; warn?: boolean } {
  const auth = e.authorization ? `${e.authorization.action} ${e.authorization.subject}` : "";
  switch (e.trail) {
    case "routing":
      if (e.servedTier)
        return { label: "served", text: `${e.kind} call served at the ${e.servedTier} tier` };
      return {
        label: "route",
        text: `${e.kind} call, ${e.tier}/${e.sensitivity} → ${e.clientId} · ${e.model}`,
      };
    case "cost":
      return {
        label: "cost",
        text: `${usd(e.usdMicros ?? 0)} · ${e.model}${e.capsCrossed?.length ? ` · crossed ${e.capsCrossed.join(", ")}` : ""}${e.refused ? ` · refused (${e.refused.reason})` : ""}`,
        warn: Boolean(e.capsCrossed?.length || e.refused),
      };
    case "policy":
      if (e.action === "permission.requested")
        return { label: "permission", text: `asked the operator: ${auth}` };
      if (e.action === "permission.resolved")
        return {
          label: "permission",
          text: `${e.decision === "allow" ? "approved" : "denied"} by ${e.by}${e.reason ? ` (${e.reason})` : ""}`,
          warn: e.decision !== "allow",
        };
      return {
        label: "policy",
        text: `${e.action} ${e.tool}: ${auth}${e.decision ? ` → ${e.decision}` : ""}${e.rule ? ` (${e.rule})` : ""}`,
        warn: e.decision === "deny",
      };
    case "access":
      return { label: "access", text: `${e.action} ${e.resource} via ${e.tool}` };
    case "lifecycle":
      if (e.action === "model.request")
        return {
          label: "request",
          text: `step ${e.step} · context v${e.contextVersion} · message revision ${e.messageRevision}`,
        };
      if (e.action === "tool.call") return { label: "tool", text: `call ${e.detail}` };
      if (e.action === "tool.result")
        return { label: "tool", text: `result ${e.detail}`, warn: e.detail !== "ok" };
      if (e.action === "budget.warning")
        return { label: "warning", text: e.detail ?? "budget warning", warn: true };
      if (e.action === "turn.completed")
        return { label: "outcome", text: `completed (${e.detail})` };
      if (e.action === "turn.uncertain")
        return { label: "outcome", text: `uncertain: ${e.detail}`, warn: true };
      return { label: "turn", text: `${e.action}${e.detail ? ` ${e.detail}` : ""}` };
    default:
      return { label: e.trail, text: e.action ?? "" };
  }
}

function timeline(t: TurnTrails): HTMLElement {
  const cost = t.events.reduce((n, e) => n + (e.trail === "cost" ? (e.usdMicros ?? 0) : 0), 0);
  const head = h(
    "div",
    { class: "timeline-head", "data-testid": "timeline-outcome" },
    h(
      "strong",
      {},
      t.outcome
        ? `${t.outcome.status}${t.outcome.terminalReason ? ` · ${t.outcome.terminalReason}` : ""}`
        : "no outcome yet",
    ),
    ` · ${usd(cost)} · ${t.org}/${t.uid} · session ${t.sessionId}`,
    t.uncertain
      ? h(
          "div",
          { class: "warn" },
          `cause: ${t.uncertain.cause} · persisted ${String(t.uncertain.persisted)} · released ${String(t.uncertain.released)}`,
        )
      : null,
    t.outcome?.notice ? h("div", { class: "muted" }, `host notice: ${t.outcome.notice}`) : null,
  );
  const rows = t.events.map((e) => {
    const d = describe(e);
    return h(
      "li",
      { class: `event ${e.trail}${d.warn ? " warn" : ""}`, "data-testid": "timeline-event" },
      h("span", { class: "at" }, time(e.at)),
      h("span", { class: "label" }, d.label),
      h("span", {}, d.text),
    );
  });
  return h("div", { class: "timeline", "data-testid": "timeline" }, head, h("ol", {}, ...rows));
}

/** Sessions per tenant, a session's turns, and a turn's timeline from its trails. */
export function sessionsView(
  info: Info,
  admin: string,
): { element: HTMLElement; refresh: () => Promise<void> } {
  const lists = h("div", { class: "sessions", "data-testid": "sessions" });
  const turns = h(
    "div",
    { class: "turns", "data-testid": "turns" },
    h("p", { class: "muted" }, "Pick a session."),
  );
  const detail = h(
    "div",
    { class: "detail", "data-testid": "turn-detail" },
    h("p", { class: "muted" }, "Pick a turn to see its timeline."),
  );

  async function openTurn(org: string, uid: string, rootKey: string): Promise<void> {
    const t = await getJson<TurnTrails>(
      `/v1/admin/turns/${encodeURIComponent(rootKey)}?org=${encodeURIComponent(org)}&uid=${encodeURIComponent(uid)}`,
      admin,
    );
    clear(detail, timeline(t));
  }

  async function openSession(org: string, s: SessionRow): Promise<void> {
    const body = await getJson<{ turns: TurnRow[] }>(
      `/v1/admin/tenants/${encodeURIComponent(org)}/sessions/${encodeURIComponent(s.uid)}/${encodeURIComponent(s.sessionId)}`,
      admin,
    );
    clear(
      turns,
      h("h3", {}, `${s.sessionId} · ${s.uid}`),
      ...body.turns.map((t) =>
        h(
          "button",
          {
            class: "turn",
            "data-testid": "turn",
            onclick: () => void openTurn(org, s.uid, t.rootKey),
          },
          h("span", {}, t.input || "(no text)"),
          h("span", { class: "muted" }, ` → ${t.reply || "(no reply)"}`),
          t.tools.length ? h("span", { class: "tag" }, t.tools.join(", ")) : null,
        ),
      ),
    );
  }

  async function refresh(): Promise<void> {
    const blocks = await Promise.all(
      info.tenants.map(async (tenant) => {
        const { sessions } = await getJson<{ sessions: SessionRow[] }>(
          `/v1/admin/tenants/${encodeURIComponent(tenant.org)}/sessions`,
          admin,
        );
        const items = sessions.map((s) =>
          h(
            "li",
            {},
            h(
              "button",
              {
                class: "link",
                "data-testid": "session",
                onclick: () => void openSession(tenant.org, s),
              },
              `${s.sessionId}`,
            ),
            h("span", { class: "muted" }, ` ${s.uid} · ${s.revision} msgs · ${time(s.updatedAt)}`),
          ),
        );
        return h(
          "div",
          {},
          h("h3", {}, tenant.name),
          items.length ? h("ul", {}, ...items) : h("p", { class: "muted" }, "No sessions yet."),
        );
      }),
    );
    clear(lists, ...blocks);
  }

  const element = h(
    "section",
    { class: "panel sessions-panel" },
    h("h2", {}, "Sessions and turn timeline"),
    h("div", { class: "columns" }, lists, turns, detail),
  );
  return { element, refresh };
}
