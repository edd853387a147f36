import { getJson } from "./api.js";
import { clear, h, svg } from "./dom.js";

interface Spend {
  readonly caps: {
    readonly perTurnUsd: number;
    readonly perClinicDayUsd: number;
    readonly action: string;
  };
  readonly tenants: readonly {
    readonly org: string;
    readonly name: string;
    readonly capUsdMicros: number;
    readonly days: readonly {
      readonly day: string;
      readonly usdMicros: number;
      readonly usd: string;
    }[];
  }[];
}

const W = 560;
const H = 160;
const PAD = 28;

/**
 * One clinic's spend per day as bars against its daily cap (the dashed line). The scale reaches
 * the cap, or the highest day when a day went over it; a day with any spend shows at least a sliver.
 */
function chart(t: Spend["tenants"][number]): SVGElement {
  const max = Math.max(t.capUsdMicros, ...t.days.map((d) => d.usdMicros), 1);
  const slot = (W - PAD) / t.days.length;
  const y = (micros: number) => H - PAD - ((H - 2 * PAD) * micros) / max;
  const bars = t.days.map((d, i) => {
    const top = d.usdMicros > 0 ? Math.min(y(d.usdMicros), H - PAD - 2) : H - PAD;
    const over = d.usdMicros >= t.capUsdMicros;
    return svg(
      "rect",
      {
        x: PAD + i * slot + 2,
        y: top,
        width: Math.max(2, slot - 4),
        height: H - PAD - top,
        class: over ? "bar over" : "bar",
        "data-day": d.day,
      },
      svg("title", {}, `${d.day}: $${d.usd} of $${(t.capUsdMicros / 1e6).toFixed(2)}`),
    );
  });
  const capY = y(t.capUsdMicros);
  const values = t.days
    .map((d, i) =>
      d.usdMicros > 0
        ? svg(
            "text",
            {
              x: PAD + i * slot + slot / 2,
              y: Math.min(y(d.usdMicros), H - PAD - 2) - 4,
              class: "axis value",
              "text-anchor": "middle",
            },
            `$${d.usd.replace(/0+$/, "")}`,
          )
        : null,
    )
    .filter((v): v is SVGElement => v !== null);
  const labels = t.days
    .filter((_, i) => i % 3 === t.days.length % 3 || i === t.days.length - 1)
    .map((d) =>
      svg(
        "text",
        {
          x: PAD + t.days.indexOf(d) * slot + slot / 2,
          y: H - 8,
          class: "axis",
          "text-anchor": "middle",
        },
        d.day.slice(5),
      ),
    );
  return svg(
    "svg",
    {
      viewBox: `0 0 ${W} ${H}`,
      class: "chart",
      role: "img",
      "aria-label": `${t.name} spend per day against the cap`,
    },
    svg("line", { x1: PAD, x2: W, y1: H - PAD, y2: H - PAD, class: "baseline" }),
    svg("line", { x1: PAD, x2: W, y1: capY, y2: capY, class: "cap" }),
    svg(
      "text",
      { x: W - 4, y: capY - 4, class: "axis", "text-anchor": "end" },
      `cap $${(t.capUsdMicros / 1e6).toFixed(2)}/day`,
    ),
    ...bars,
    ...values,
    ...labels,
  );
}

/** Spend per clinic per day against the caps, from the spend store's tenant-day counters. */
export function spendView(admin: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const body = h("div", { class: "spend", "data-testid": "spend" });
  async function refresh(): Promise<void> {
    const spend = await getJson<Spend>("/v1/admin/spend?days=14", admin);
    clear(
      body,
      h(
        "p",
        { class: "muted" },
        `Caps: $${spend.caps.perTurnUsd} per turn, $${spend.caps.perClinicDayUsd} per clinic per day (${spend.caps.action} when reached).`,
      ),
      ...spend.tenants.map((t) => {
        const today = t.days.at(-1);
        const pct = today
          ? ((100 * today.usdMicros) / Math.max(1, t.capUsdMicros)).toFixed(2)
          : "0";
        return h(
          "div",
          { class: "spend-tenant", "data-testid": "spend-tenant", "data-org": t.org },
          h("h3", {}, t.name),
          h(
            "div",
            { class: "muted", "data-testid": "spend-today" },
            `today $${today?.usd ?? "0"} · ${pct}% of the daily cap`,
          ),
          chart(t),
        );
      }),
    );
  }
  const element = h("section", { class: "panel" }, h("h2", {}, "Spend per clinic per day"), body);
  return { element, refresh };
}
