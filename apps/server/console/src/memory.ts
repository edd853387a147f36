import { deleteJson, getJson, type Tenant } from "./api.js";
import { clear, h } from "./dom.js";

/** A profile fact as the host's operator route returns it: the text, and a source that names the session by its pseudonym. */
interface OperatorFact {
  readonly factId: string;
  readonly key: string;
  readonly text: string;
  readonly sensitivity: string;
  readonly confidence: number;
  readonly current: boolean;
  readonly source: {
    readonly sessionPseudonym: string;
    readonly turnId: string;
    readonly at: number;
  };
}

interface PersonMemory {
  readonly org: string;
  readonly uid: string;
  readonly facts: readonly OperatorFact[];
  readonly episodes: number;
  readonly truncated: boolean;
}

const path = (org: string, uid: string) =>
  `/v1/admin/tenants/${encodeURIComponent(org)}/people/${encodeURIComponent(uid)}/memory`;

/** A person's profile facts with their sources; the operator forgets one fact, or erases the person's memory (a second click confirms). */
export function memoryView(admin: string): { element: HTMLElement; refresh: () => Promise<void> } {
  const people = h("div", { class: "sessions", "data-testid": "memory-people" });
  const detail = h(
    "div",
    { class: "detail", "data-testid": "memory-detail" },
    h("p", { class: "muted" }, "Pick a patient to see what Alma remembers."),
  );

  async function open(org: string, uid: string, name: string | null): Promise<void> {
    const m = await getJson<PersonMemory>(path(org, uid), admin);
    const rows = m.facts.map((f) =>
      h(
        "tr",
        { "data-testid": "memory-fact", "data-fact": f.factId, class: f.current ? "" : "muted" },
        h("td", {}, f.key),
        h("td", { "data-testid": "fact-text" }, f.text),
        h(
          "td",
          {},
          `${f.sensitivity} · ${Math.round(f.confidence * 100)}%${f.current ? "" : " · superseded"}`,
        ),
        h(
          "td",
          { "data-testid": "fact-source", class: "small" },
          `session ${f.source.sessionPseudonym} · turn ${f.source.turnId} · ${new Date(f.source.at).toISOString().slice(0, 16).replace("T", " ")}`,
        ),
        h(
          "td",
          {},
          h(
            "button",
            {
              "data-testid": "forget-fact",
              onclick: () =>
                void deleteJson(
                  `${path(org, uid)}/facts/${encodeURIComponent(f.factId)}`,
                  admin,
                ).then(() => open(org, uid, name)),
            },
            "Forget",
          ),
        ),
      ),
    );
    const erase = h(
      "button",
      { class: "danger", "data-testid": "erase-memory" },
      "Erase this patient's memory",
    );
    erase.addEventListener("click", () => {
      if (erase.dataset.armed !== "1") {
        erase.dataset.armed = "1";
        erase.textContent = `Confirm: erase every fact and episode of ${uid}`;
        return;
      }
      void deleteJson(path(org, uid), admin).then(() => open(org, uid, name));
    });
    clear(
      detail,
      h("h3", {}, `${name ?? uid} · ${org}/${uid}`),
      h(
        "p",
        { class: "muted", "data-testid": "memory-summary" },
        `${m.facts.length} facts · ${m.episodes} episodes${m.truncated ? " · more not shown" : ""}`,
      ),
      rows.length
        ? h(
            "table",
            { class: "facts" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", {}, "key"),
                h("th", {}, "fact"),
                h("th", {}, "sensitivity"),
                h("th", {}, "source"),
                h("th", {}, ""),
              ),
            ),
            h("tbody", {}, ...rows),
          )
        : h("p", { class: "muted", "data-testid": "memory-empty" }, "Nothing remembered."),
      erase,
    );
  }

  async function refresh(): Promise<void> {
    // The people the host knows now (a patient who chatted since the console opened included).
    const { tenants } = await getJson<{ tenants: Tenant[] }>("/v1/admin/tenants", admin);
    const blocks = tenants.map((t) =>
      h(
        "div",
        {},
        h("h3", {}, t.name),
        t.people.length
          ? h(
              "ul",
              {},
              ...t.people.map((p) =>
                h(
                  "li",
                  {},
                  h(
                    "button",
                    {
                      class: "link",
                      "data-testid": "memory-person",
                      "data-uid": p.uid,
                      onclick: () => void open(t.org, p.uid, p.name),
                    },
                    p.name ?? p.uid,
                  ),
                ),
              ),
            )
          : h("p", { class: "muted" }, "No patients yet."),
      ),
    );
    clear(people, ...blocks);
  }

  const element = h(
    "section",
    { class: "panel memory-panel" },
    h("h2", {}, "Patient memory"),
    h("div", { class: "columns" }, people, detail),
  );
  return { element, refresh };
}
