import { getJson, postJson } from "./api.js";
import { clear, h } from "./dom.js";

interface RoutineRow {
  readonly org: string;
  readonly id: string;
  readonly goal: string;
  readonly schedule: { readonly cron: string; readonly timeZone: string };
  readonly cap: { readonly usd: number; readonly onExceeded: string };
  readonly execution: string;
  readonly catchUp: boolean;
  readonly enabled: boolean;
}

interface RunRow {
  readonly org: string;
  readonly routineId: string;
  readonly slot: number;
  readonly slotAt: string;
  readonly attempt: number;
  readonly state: string;
  readonly reason?: string;
  readonly costMicros?: number;
  readonly capsCrossed?: readonly string[];
  readonly late?: true;
}

interface Message {
  readonly deliveryId: string;
  readonly org: string;
  readonly text: string;
}

const usd = (micros: number | undefined) =>
  micros === undefined ? "" : ` · $${(micros / 1e6).toFixed(6)}`;

/**
 * The routines on a clock: each clinic's routines, their runs (newest slot first; a run that needs
 * the operator offers abandon, confirm and rerun), the staff inbox the results went to, and a
 * "tick now" that runs the scheduler once.
 */
export function routinesView(admin: string): {
  element: HTMLElement;
  refresh: () => Promise<void>;
} {
  const routines = h("ul", { class: "list", "data-testid": "routines" });
  const runs = h("ul", { class: "list", "data-testid": "routine-runs" });
  const inbox = h("ul", { class: "list", "data-testid": "routine-inbox" });
  const status = h("p", { class: "muted small", "data-testid": "routines-tick-status" }, "");
  const resolve = async (r: RunRow, action: string) => {
    await postJson(
      `/v1/admin/routines/${encodeURIComponent(r.org)}/${encodeURIComponent(r.routineId)}/runs/${r.slot}/resolve`,
      admin,
      { action },
    );
    await refresh();
  };
  const runItem = (r: RunRow) =>
    h(
      "li",
      { "data-testid": "routine-run", "data-state": r.state },
      h("div", {}, `${r.org} · ${r.routineId} · ${r.slotAt} · attempt ${r.attempt}`),
      h(
        "div",
        { class: r.state === "completed" ? "small" : "warn small" },
        `${r.state}${r.reason ? ` (${r.reason})` : ""}${r.late ? " · late" : ""}${usd(r.costMicros)}${r.capsCrossed ? ` · crossed ${r.capsCrossed.join(", ")}` : ""}`,
      ),
      r.state === "reconciliation_required" || r.state === "failed"
        ? h(
            "div",
            {},
            ...["abandon", "confirm_completed", "rerun"].map((a) =>
              h(
                "button",
                {
                  class: "secondary",
                  "data-testid": `run-${a}`,
                  onclick: () => void resolve(r, a),
                },
                a.replace("_", " "),
              ),
            ),
          )
        : null,
    );
  async function refresh(): Promise<void> {
    const [list, history, messages] = await Promise.all([
      getJson<{
        routines: RoutineRow[];
        lastTick: { at: number; ran: number; missed: number; submitted: number } | null;
      }>("/v1/admin/routines", admin),
      getJson<{ runs: RunRow[] }>("/v1/admin/routines/runs", admin),
      getJson<{ messages: Message[] }>("/v1/admin/routines/inbox", admin),
    ]);
    clear(
      routines,
      ...list.routines.map((r) =>
        h(
          "li",
          { "data-testid": "routine-row", "data-org": r.org },
          h(
            "div",
            {},
            `${r.org} · ${r.id} · "${r.schedule.cron}" ${r.schedule.timeZone}${r.enabled ? "" : " · paused"}`,
          ),
          h(
            "div",
            { class: "muted small" },
            `cap $${r.cap.usd} (${r.cap.onExceeded}) · ${r.execution}${r.catchUp ? " · catch-up" : ""} · ${r.goal}`,
          ),
        ),
      ),
    );
    clear(
      runs,
      ...(history.runs.length === 0 ? [h("li", { class: "muted" }, "No run yet.")] : []),
      ...history.runs.map(runItem),
    );
    clear(
      inbox,
      ...(messages.messages.length === 0
        ? [h("li", { class: "muted" }, "Nothing delivered yet.")]
        : []),
      ...messages.messages.map((m) =>
        h(
          "li",
          { "data-testid": "routine-message" },
          h("div", { class: "small muted" }, m.deliveryId),
          h("div", {}, m.text),
        ),
      ),
    );
    status.textContent = list.lastTick
      ? `last tick ${new Date(list.lastTick.at).toISOString()}: ${list.lastTick.ran} ran, ${list.lastTick.submitted} submitted or waiting on a batch job, ${list.lastTick.missed} missed`
      : "no tick yet";
  }
  const tick = h(
    "button",
    {
      "data-testid": "routines-tick",
      onclick: async () => {
        await postJson("/v1/admin/routines/tick", admin);
        await refresh();
      },
    },
    "Tick now",
  );
  const element = h(
    "section",
    { class: "panel" },
    h("h2", {}, "Routines"),
    h("div", {}, tick, status),
    routines,
    h("h3", {}, "Runs"),
    runs,
    h("h3", {}, "Staff inbox"),
    inbox,
  );
  return { element, refresh };
}
