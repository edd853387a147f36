import { ApiError, adminToken, getJson, type Info, saveAdminToken, type Tenant } from "./api.js";
import { asksView } from "./asks.js";
import { chatView } from "./chat.js";
import { clear, h } from "./dom.js";
import { memoryView } from "./memory.js";
import { reconcileView } from "./reconcile.js";
import { routinesView } from "./routines.js";
import { sessionsView } from "./sessions.js";
import { spendView } from "./spend.js";

const app = document.getElementById("app") as HTMLElement;

/** The header on every screen: what this is and, with no provider key, that the model is the offline demo. */
function header(info: Info): HTMLElement {
  return h(
    "header",
    {},
    h("h1", {}, "Alma ", h("span", { class: "muted" }, "clinic front desk · operator console")),
    info.offlineDemo
      ? h(
          "span",
          {
            class: "badge demo",
            "data-testid": "demo-badge",
            title: "No provider key is set: replies come from a fixed script, not an AI.",
          },
          "offline demo model",
        )
      : h("span", { class: "badge", "data-testid": "model-badge" }, info.model),
    h(
      "span",
      { class: "muted small" },
      `store: ${info.store.kind}${info.store.durable ? "" : " (not durable)"}`,
    ),
  );
}

/** The login form; `problem` says why the last token did not open the console. */
function login(info: Info, problem?: string): void {
  const input = h("input", {
    type: "password",
    placeholder: "operator token",
    "data-testid": "admin-token",
    size: 40,
  });
  const form = h(
    "form",
    {
      class: "panel login",
      onsubmit: (e: Event) => {
        e.preventDefault();
        saveAdminToken(input.value.trim());
        void start();
      },
    },
    h("h2", {}, "Operator token"),
    h(
      "p",
      { class: "muted" },
      "npm start prints a console link that carries it (npx alma console prints it again); it is also in .alma/admin-token.",
    ),
    problem
      ? h("p", { class: "warn", role: "alert", "data-testid": "login-error" }, problem)
      : null,
    input,
    h("button", { type: "submit" }, "Open"),
  );
  clear(app, header(info), form);
}

/** The asks' poll of the console on screen (a new token, by a pasted link, starts another). */
let poll: ReturnType<typeof setInterval> | undefined;

async function start(): Promise<void> {
  clearInterval(poll);
  const info = await getJson<Info>("/v1/info");
  const admin = adminToken();
  if (!admin) return login(info);
  let tenants: readonly Tenant[];
  try {
    tenants = (await getJson<{ tenants: Tenant[] }>("/v1/admin/tenants", admin)).tenants;
  } catch (error) {
    sessionStorage.clear();
    return login(
      info,
      error instanceof ApiError && error.status === 401
        ? "The host refused that operator token. Check it, or open the link npx alma console prints."
        : `The token could not be checked: ${(error as Error).message}`,
    );
  }
  const asks = asksView(admin);
  const sessions = sessionsView(info, admin);
  const spend = spendView(admin);
  const reconcile = reconcileView(admin);
  const memory = memoryView(admin);
  const routines = routinesView(admin);
  const chat = chatView(info, tenants, admin, () => void asks.refresh());
  const views = {
    chat,
    sessions: sessions.element,
    spend: spend.element,
    reconcile: reconcile.element,
    memory: memory.element,
    routines: routines.element,
  } as const;
  const main = h("main", {});
  const tabs = h("nav", {});
  const show = (name: keyof typeof views) => {
    for (const b of tabs.querySelectorAll("button"))
      b.classList.toggle("active", b.dataset.tab === name);
    clear(main, views[name]);
    if (name === "sessions") void sessions.refresh();
    if (name === "spend") void spend.refresh();
    if (name === "reconcile") void reconcile.refresh();
    if (name === "memory") void memory.refresh();
    if (name === "routines") void routines.refresh();
  };
  for (const [name, label] of [
    ["chat", "Chat"],
    ["sessions", "Sessions & timeline"],
    ["spend", "Spend"],
    ["reconcile", "Uncertain & late usage"],
    ["memory", "Patient memory"],
    ["routines", "Routines"],
  ] as const) {
    tabs.append(
      h(
        "button",
        { "data-tab": name, "data-testid": `tab-${name}`, onclick: () => show(name) },
        label,
      ),
    );
  }
  clear(app, header(info), tabs, h("div", { class: "layout" }, main, asks.element));
  show("chat");
  await asks.refresh();
  // Asks arrive while a turn waits; a one-second poll keeps the list live without another stream.
  poll = setInterval(() => void asks.refresh(), 1000);
}

// A login link pasted into a tab that is already open changes only the fragment: no load follows.
window.addEventListener("hashchange", () => {
  if (/(?:^#|&)admin=/.test(location.hash)) void start();
});

void start().catch((error: unknown) => {
  clear(app, h("p", { class: "warn" }, `The console could not start: ${(error as Error).message}`));
});
