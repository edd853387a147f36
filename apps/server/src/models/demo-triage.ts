import type { ModelRequest } from "@alma-harness/core";
import { classify } from "./demo-script.js";

/** The demo's answer to a structured request (the triage classifier): the demo script's intent as a triage object. */
export function demoStructured(request: ModelRequest): string {
  const last = request.messages.at(-1);
  const text = last?.blocks.map((b) => (b.type === "text" ? b.text : "")).join(" ") ?? "";
  const urgent = /\b(urgent|pain|bleeding|emergency)\b/i.test(text);
  const intent = classify(text);
  const category = urgent
    ? "clinical"
    : intent === "record"
      ? "records"
      : intent === "hours"
        ? "information"
        : intent === "help"
          ? "other"
          : "booking";
  return JSON.stringify({ category, urgency: urgent ? 5 : 2 });
}
