import {
  ApiError,
  type Info,
  randomId,
  type SseEvent,
  streamTurn,
  type Tenant,
  tenantToken,
} from "./api.js";
import { clear, h } from "./dom.js";

interface ResultData {
  readonly status: string;
  readonly text?: string;
  readonly delivered?: readonly string[];
  readonly notice?: string;
  readonly costUsd?: string;
  readonly rootKey?: string;
}

type Who = "you" | "assistant" | "progress" | "system";
type Bubble = (who: Who, text: string, extra?: string) => HTMLElement;

function newSessionId(): string {
  return `console-${randomId().slice(0, 8)}`;
}

function permissionLine(data: Record<string, unknown>): string {
  if (data.state === "pending")
    return `Waiting for the clinic to approve ${String(data.action)} (${String(data.tool)})…`;
  return `The clinic ${data.state === "approved" ? "approved" : data.state === "denied" ? "denied" : "did not answer"} it.`;
}

/**
 * Follows one turn's SSE events: each settled step's text as progress, tool and permission lines,
 * and the result. The last step's text is the reply, so it is shown once, as the answer.
 */
async function follow(
  events: AsyncGenerator<SseEvent>,
  bubble: Bubble,
  status: HTMLElement,
  offlineDemo: boolean,
): Promise<ResultData> {
  let result: ResultData | undefined;
  let lastStep: { el: HTMLElement; text: string } | undefined;
  let parked = false;
  for await (const e of events) {
    const data = e.data as Record<string, unknown>;
    // The stream reads on after a park: what comes next is the decided turn going on.
    if (parked && (e.event !== "result" || data.status !== "awaiting_approval")) {
      parked = false;
      bubble("system", "The clinic decided; the assistant goes on.");
      status.textContent = "running…";
    }
    if (e.event === "text")
      lastStep = {
        el: bubble("progress", String(data.text), `step ${String(data.step)}`),
        text: String(data.text),
      };
    else if (e.event === "tool")
      bubble("system", `tool ${String(data.name)}${data.isError ? " (error)" : ""}`);
    else if (e.event === "permission") {
      bubble("system", permissionLine(data));
      status.textContent =
        data.state === "pending" ? "waiting for an operator (see Pending asks)" : "running…";
    } else if (e.event === "result") {
      result = data as unknown as ResultData;
      if (result.status === "awaiting_approval") parked = true;
    } else if (e.event === "error") {
      const err = data.error as { code: string; message: string };
      throw new ApiError(Number(data.status), err.code, err.message);
    }
  }
  if (!result) throw new ApiError(0, "no_result", "the stream ended without a result");
  if (result.text && lastStep?.text === result.text) lastStep.el.remove();
  if (result.text) bubble("assistant", result.text, offlineDemo ? "offline demo model" : undefined);
  for (const m of result.delivered ?? []) bubble("system", `Sent to the patient: ${m}`);
  if (result.notice) bubble("system", result.notice);
  return result;
}

function pickers(tenants: readonly Tenant[], onClinic: () => void) {
  const clinic = h("select", { "data-testid": "clinic", "aria-label": "Clinic" });
  const patient = h("select", { "data-testid": "patient", "aria-label": "Patient" });
  for (const t of tenants) clinic.append(h("option", { value: t.org }, t.name));
  const fillPatients = () => {
    const tenant = tenants.find((t) => t.org === clinic.value);
    clear(
      patient,
      ...(tenant?.people ?? []).map((p) =>
        h("option", { value: p.uid }, p.name ? `${p.name} (${p.uid})` : p.uid),
      ),
    );
  };
  clinic.addEventListener("change", () => {
    fillPatients();
    onClinic();
  });
  fillPatients();
  return { clinic, patient };
}

/**
 * Chat as a patient of a tenant clinic, with a token the host mints for the operator. Replies
 * arrive step by step over SSE; the turn waits while a booking is with the operator.
 */
export function chatView(
  info: Info,
  tenants: readonly Tenant[],
  admin: string,
  onTurnSettled: () => void,
): HTMLElement {
  const session = h("input", {
    "data-testid": "session",
    "aria-label": "Session",
    value: newSessionId(),
    size: 22,
  });
  const log = h("div", { class: "chat-log", "data-testid": "chat-log", "aria-live": "polite" });
  const input = h("input", {
    "data-testid": "chat-input",
    placeholder: "Write as the patient… e.g. “Please book an appointment”",
    "aria-label": "Message",
  });
  const send = h("button", { type: "submit", "data-testid": "send" }, "Send");
  const status = h("span", { class: "muted", "data-testid": "chat-status" });
  const startNew = () => {
    session.value = newSessionId();
    clear(log);
  };
  const { clinic, patient } = pickers(tenants, startNew);
  const bubble: Bubble = (who, text, extra) => {
    const el = h(
      "div",
      { class: `bubble ${who}`, "data-role": who },
      text,
      extra ? h("span", { class: "tag" }, extra) : null,
    );
    log.append(el);
    log.scrollTop = log.scrollHeight;
    return el;
  };

  async function submit(event: Event): Promise<void> {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    send.disabled = true;
    status.textContent = "running…";
    bubble("you", text);
    try {
      const token = await tenantToken(admin, clinic.value, patient.value);
      const result = await follow(
        streamTurn(token, session.value, text),
        bubble,
        status,
        info.offlineDemo,
      );
      status.textContent = `${result.status}${result.costUsd ? ` · $${result.costUsd}` : ""}`;
    } catch (error) {
      const e = error as ApiError;
      bubble("system", `Error: ${e.code ?? "error"}: ${e.message}`);
      status.textContent = "failed";
    } finally {
      send.disabled = false;
      onTurnSettled();
    }
  }

  const form = h(
    "form",
    { class: "chat-form", onsubmit: (e: Event) => void submit(e) },
    input,
    send,
  );
  const newSession = h(
    "button",
    { type: "button", class: "secondary", onclick: startNew },
    "New session",
  );
  return h(
    "section",
    { class: "panel chat", "data-testid": "chat" },
    h("h2", {}, "Chat as a patient"),
    h(
      "div",
      { class: "row" },
      h("label", {}, "Clinic ", clinic),
      h("label", {}, "Patient ", patient),
      h("label", {}, "Session ", session),
      newSession,
    ),
    log,
    form,
    status,
  );
}
