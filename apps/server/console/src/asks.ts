import { getJson, postJson } from "./api.js";
import { clear, h, time } from "./dom.js";

interface Ask {
  readonly id: string;
  readonly org: string;
  readonly uid: string;
  readonly sessionId: string;
  readonly tool: string;
  readonly action: string;
  readonly subject?: string;
  readonly input: unknown;
  readonly createdAt: number;
  /** A parked ask's expiry: the kernel denies it undecided then. */
  readonly expiresAt?: number;
}

/**
 * Pending permission asks, read from the store: the turn that made one is parked on it, across
 * restarts. Approve or deny records the decision through the API; the turn then goes on (or the
 * model reads the denial).
 */
export function asksView(admin: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const list = h("div", { class: "asks", "data-testid": "asks" });
  const count = h("span", { class: "count", "data-testid": "asks-count" }, "0");
  let shown = "";

  async function answer(id: string, verdict: "approve" | "deny"): Promise<void> {
    await postJson(`/v1/admin/asks/${encodeURIComponent(id)}/${verdict}`, admin).catch(
      () => undefined,
    );
    await refresh();
  }

  async function refresh(): Promise<void> {
    let asks: readonly Ask[];
    try {
      asks = (await getJson<{ asks: Ask[] }>("/v1/admin/asks", admin)).asks;
    } catch {
      return;
    }
    const key = asks.map((a) => a.id).join(",");
    count.textContent = String(asks.length);
    if (key === shown) return;
    shown = key;
    if (asks.length === 0) {
      clear(list, h("p", { class: "muted" }, "No turn is waiting for an operator."));
      return;
    }
    clear(
      list,
      ...asks.map((a) =>
        h(
          "div",
          { class: "ask", "data-testid": "ask", "data-ask": a.id },
          h(
            "div",
            {},
            h("strong", {}, a.subject ? `${a.action} ${a.subject}` : a.action),
            h("span", { class: "muted" }, ` · ${a.tool}`),
          ),
          h(
            "div",
            { class: "muted" },
            `${a.org} · ${a.uid} · session ${a.sessionId} · since ${time(a.createdAt)}${a.expiresAt ? ` · expires ${time(a.expiresAt)}` : ""}`,
          ),
          h("code", {}, JSON.stringify(a.input)),
          h(
            "div",
            { class: "row" },
            h(
              "button",
              { "data-testid": "approve", onclick: () => void answer(a.id, "approve") },
              "Approve",
            ),
            h(
              "button",
              { class: "danger", "data-testid": "deny", onclick: () => void answer(a.id, "deny") },
              "Deny",
            ),
          ),
        ),
      ),
    );
  }

  const element = h(
    "aside",
    { class: "panel asks-panel" },
    h("h2", {}, "Pending asks ", count),
    list,
  );
  return { element, refresh };
}
