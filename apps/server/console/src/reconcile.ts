import { getJson } from "./api.js";
import { clear, h, time } from "./dom.js";

interface UncertainTurn {
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly cause: string;
  readonly persisted: boolean | null;
  readonly released: boolean;
  readonly at: number;
}

interface LateUsage {
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly rootKey: string;
  readonly operationId: string;
  readonly kind: string;
  readonly model: string;
  readonly attribution: string;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  readonly source: string;
  readonly observedAt: number;
}

/**
 * What needs the operator's reconciliation: the turns the runner reported uncertain, and beside
 * them the late usage of cut calls (evidence of what a call may have cost; it settled nothing).
 */
export function reconcileView(admin: string): {
  element: HTMLElement;
  refresh: () => Promise<void>;
} {
  const uncertain = h("ul", { class: "list", "data-testid": "uncertain-turns" });
  const late = h("ul", { class: "list", "data-testid": "late-usage" });
  async function refresh(): Promise<void> {
    const [turns, inbox] = await Promise.all([
      getJson<{ turns: UncertainTurn[] }>("/v1/admin/uncertain", admin),
      getJson<{ available: boolean; observations: LateUsage[] }>("/v1/admin/late-usage", admin),
    ]);
    clear(
      uncertain,
      ...(turns.turns.length === 0
        ? [h("li", { class: "muted" }, "No uncertain turn since the host started.")]
        : []),
      ...turns.turns.map((u) =>
        h(
          "li",
          { "data-testid": "uncertain-turn" },
          h("div", {}, `${time(u.at)} · ${u.org}/${u.uid} · session ${u.sessionId}`),
          h(
            "div",
            { class: "warn small" },
            `cause ${u.cause} · persisted ${String(u.persisted)} · released ${String(u.released)}`,
          ),
        ),
      ),
    );
    clear(
      late,
      ...(!inbox.available
        ? [h("li", { class: "muted" }, "This store set keeps no late usage.")]
        : []),
      ...(inbox.available && inbox.observations.length === 0
        ? [h("li", { class: "muted" }, "No late usage.")]
        : []),
      ...inbox.observations.map((o) =>
        h(
          "li",
          { "data-testid": "late-usage-row" },
          h(
            "div",
            {},
            `${time(o.observedAt)} · ${o.org}/${o.uid} · session ${o.sessionId} · ${o.kind} call ${o.operationId}`,
          ),
          h(
            "div",
            { class: "small" },
            `${o.source} · ${o.model} · ${o.usage.inputTokens} in / ${o.usage.outputTokens} out (${o.attribution}) · not settled`,
          ),
        ),
      ),
    );
  }
  const element = h(
    "section",
    { class: "panel" },
    h("h2", {}, "Uncertain turns"),
    uncertain,
    h("h2", {}, "Late usage"),
    h(
      "p",
      { class: "muted small" },
      "Usage a provider reported after its call was cut. Evidence for reconciliation: it moved no spend, no cap and no stored turn.",
    ),
    late,
  );
  return { element, refresh };
}
