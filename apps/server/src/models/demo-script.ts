import type { JsonValue, ModelRequest, Msg } from "@alma-harness/core";
import { DEFAULT_FINAL_ANSWER_NOTICE, DEFAULT_TIME_NOTICE } from "@alma-harness/loop";

/**
 * The offline demo model's script. It is not a language model and never pretends to be one: it
 * picks one of six fixed scripts from keywords in the person's message, then plays the script's
 * next step from what the request already holds (the tool results so far). Same request, same
 * answer. It only knows the example clinic agent's tools.
 */
export type DemoStep =
  | { readonly kind: "text"; readonly text: string }
  | {
      readonly kind: "tool";
      readonly text: string;
      readonly name: string;
      readonly input: Record<string, JsonValue>;
    };

export type DemoIntent =
  | "hours"
  | "slots"
  | "book"
  | "cancel"
  | "tell"
  | "remember"
  | "record"
  | "help";

export const DEMO_HELP =
  "I am the offline demo model: a fixed script, not an AI. Try one of: " +
  "“When are you open on Monday?”, “Any free slots tomorrow?”, “Please book an appointment”, " +
  "“Cancel my appointment”, “What is on my record?”, “I am allergic to penicillin”, “Do you remember my allergy?”.";

interface TurnSoFar {
  readonly input: string;
  /** The harness context of the turn (the host's volatile text). */
  readonly context: string;
  /** Main steps already taken in this turn. */
  readonly steps: number;
  readonly results: ReadonlyMap<string, { readonly output: JsonValue; readonly isError: boolean }>;
  readonly finalAnswer: boolean;
}

export function classify(text: string): DemoIntent {
  const t = text.toLowerCase();
  if (/\bcancel/.test(t)) return "cancel";
  if (/\bbook|appointment|schedule/.test(t)) return "book";
  if (/\bslots?\b|availab|\bfree\b/.test(t)) return "slots";
  if (/\bhours?\b|\bopen|\bclose/.test(t)) return "hours";
  if (/\bi(?: am|'m) allergic to\b/.test(t)) return "tell";
  if (/\bremember\b/.test(t)) return "remember";
  if (/record|allerg|\bfile\b|medication/.test(t)) return "record";
  return "help";
}

function isPersonText(block: Msg["blocks"][number]): boolean {
  return block.type === "text" && block.origin === undefined;
}

/** Reads the turn from the request: the person's last message and what followed it. */
export function turnSoFar(request: ModelRequest): TurnSoFar {
  const messages = request.messages;
  let start = messages.length - 1;
  while (
    start >= 0 &&
    !(messages[start]?.role === "user" && messages[start]?.blocks.some(isPersonText))
  )
    start -= 1;
  const first = messages[start];
  const texts = (first?.blocks ?? []).filter((b) => b.type === "text");
  const input = texts
    .filter((b) => b.origin === undefined)
    .map((b) => b.text)
    .join("\n");
  const context = texts
    .filter((b) => b.origin === "harness")
    .map((b) => b.text)
    .join("\n");
  const results = new Map<string, { output: JsonValue; isError: boolean }>();
  let steps = 0;
  for (const msg of messages.slice(start + 1)) {
    if (msg.role === "assistant") steps += 1;
    for (const b of msg.blocks)
      if (b.type === "tool_result") results.set(b.name, { output: b.output, isError: b.isError });
  }
  const last = messages.at(-1);
  const finalAnswer = (last?.blocks ?? []).some(
    (b) =>
      b.type === "text" &&
      b.origin === "harness" &&
      (b.text === DEFAULT_FINAL_ANSWER_NOTICE || b.text === DEFAULT_TIME_NOTICE),
  );
  return { input, context, steps, results, finalAnswer };
}

function field(value: JsonValue | undefined, key: string): JsonValue | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as { readonly [k: string]: JsonValue })[key]
    : undefined;
}

function str(value: JsonValue | undefined): string {
  return typeof value === "string" ? value : "";
}

function dayWord(text: string): string {
  const m =
    /\b(today|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{4}-\d{2}-\d{2})\b/i.exec(
      text,
    );
  return (m?.[1] ?? "today").toLowerCase();
}

function slotLabel(slot: string): string {
  return slot.replace("T", " at ");
}

function errorOf(result: { output: JsonValue; isError: boolean } | undefined): string {
  return (
    str(field(result?.output, "error")) ||
    (typeof result?.output === "string" ? result.output : "it was refused")
  );
}

const text = (t: string): DemoStep => ({ kind: "text", text: t });
const tool = (t: string, name: string, input: Record<string, JsonValue>): DemoStep => ({
  kind: "tool",
  text: t,
  name,
  input,
});

function hoursScript(turn: TurnSoFar): DemoStep {
  if (turn.steps === 0)
    return tool("Let me check the opening hours.", "opening_hours", { day: dayWord(turn.input) });
  const out = turn.results.get("opening_hours");
  if (!out || out.isError) return text("I could not read the opening hours for that day.");
  const o = out.output;
  const open = str(field(o, "open"));
  const when = `${str(field(o, "weekday"))} ${str(field(o, "day"))}`.trim();
  return text(
    open
      ? `${str(field(o, "clinic"))} is open on ${when} from ${open} to ${str(field(o, "close"))}.`
      : `${str(field(o, "clinic"))} is closed on ${when}.`,
  );
}

function slotsOf(turn: TurnSoFar): string[] {
  const slots = field(turn.results.get("find_free_slots")?.output, "slots");
  return Array.isArray(slots) ? slots.filter((s): s is string => typeof s === "string") : [];
}

function slotsScript(turn: TurnSoFar): DemoStep {
  if (turn.steps === 0)
    return tool("Let me look at the calendar.", "find_free_slots", { day: dayWord(turn.input) });
  const slots = slotsOf(turn);
  if (slots.length === 0) return text("There are no free slots in the next five days.");
  return text(
    `Free slots: ${slots.map(slotLabel).join(", ")}. Say “book an appointment” and I will ask the clinic to book the first one.`,
  );
}

function bookScript(turn: TurnSoFar): DemoStep {
  if (turn.steps === 0)
    return tool("Let me find a free slot for you.", "find_free_slots", {
      day: dayWord(turn.input),
    });
  if (turn.steps === 1) {
    const first = slotsOf(turn)[0];
    if (!first)
      return text("There are no free slots in the next five days, so I could not book anything.");
    return tool(
      `The first free slot is ${slotLabel(first)}. I am asking the clinic to approve the booking.`,
      "book_appointment",
      { slotId: first },
    );
  }
  const booked = turn.results.get("book_appointment");
  if (!booked || booked.isError)
    return text(
      `The booking was not made: ${errorOf(booked)}. The clinic team can help you by phone.`,
    );
  const slot = slotLabel(str(field(booked.output, "slotId")));
  const id = str(field(booked.output, "appointmentId"));
  return tool(
    `Your appointment is booked for ${slot}. I am sending you a confirmation.`,
    "send_message",
    {
      text: `Confirmed: your appointment on ${slot} (reference ${id}).`,
    },
  );
}

function selfId(turn: TurnSoFar): string {
  return /\bpatient ([A-Za-z0-9_.-]+)/.exec(turn.context)?.[1] ?? "unknown";
}

function cancelScript(turn: TurnSoFar): DemoStep {
  if (turn.steps === 0)
    return tool("Let me look up your appointments.", "read_patient_record", {
      patientId: selfId(turn),
    });
  if (turn.steps === 1) {
    const list = field(turn.results.get("read_patient_record")?.output, "appointments");
    const booked = (Array.isArray(list) ? list : []).find((a) => field(a, "status") === "booked");
    if (!booked) return text("You have no upcoming appointments to cancel.");
    return tool(
      `Cancelling your appointment on ${slotLabel(str(field(booked, "slotId")))}.`,
      "cancel_appointment",
      { appointmentId: str(field(booked, "id")) },
    );
  }
  const done = turn.results.get("cancel_appointment");
  if (!done || done.isError) return text(`The appointment was not cancelled: ${errorOf(done)}.`);
  const slot = slotLabel(str(field(done.output, "slotId")));
  return tool(`Your appointment on ${slot} is cancelled.`, "send_message", {
    text: `Cancelled: your appointment on ${slot}.`,
  });
}

function recordScript(turn: TurnSoFar): DemoStep {
  const target = /\bp-\d{4}\b/i.exec(turn.input)?.[0]?.toLowerCase() ?? selfId(turn);
  if (turn.steps === 0)
    return tool("Let me open the record.", "read_patient_record", { patientId: target });
  const out = turn.results.get("read_patient_record");
  if (!out || out.isError) return text(`I cannot share that record: ${errorOf(out)}.`);
  const o = out.output;
  const allergies = field(o, "allergies");
  const list =
    Array.isArray(allergies) && allergies.length > 0 ? allergies.join(", ") : "none recorded";
  return text(
    `Record of ${str(field(o, "name"))}: allergies: ${list}. Notes: ${str(field(o, "notes"))}`,
  );
}

/** The allergen a person names ("I am allergic to penicillin"), lowercased; empty when none. */
export function allergenOf(text: string): string {
  return /\bi(?: am|'m) allergic to ([a-z][a-z-]{1,40})/i.exec(text)?.[1]?.toLowerCase() ?? "";
}

function tellScript(turn: TurnSoFar): DemoStep {
  const allergen = allergenOf(turn.input);
  return text(
    allergen
      ? `Thank you, I have noted that you are allergic to ${allergen}.`
      : "Thank you, I have noted that.",
  );
}

/** What the turn's recalled memory says, read from the harness context's `Facts:` lines. */
function rememberScript(turn: TurnSoFar): DemoStep {
  const facts = [
    ...turn.context.matchAll(/^- [a-z][a-z0-9_.-]* \(\d{4}-\d{2}-\d{2}\): (.+)$/gm),
  ].map((m) => m[1]);
  return text(
    facts.length > 0
      ? `From our earlier conversations I remember: ${facts.join(" ")}`
      : "I do not remember anything from earlier conversations.",
  );
}

/**
 * The memory extraction's answer (a request with the `memory_extraction` output): the allergy a
 * person named in a `Person:` line of the transcript as a fact, and the turn as a one-line episode.
 */
function extractionAnswer(request: ModelRequest): DemoStep {
  const block = request.messages[0]?.blocks[0];
  const transcript = block?.type === "text" ? block.text : "";
  const said = transcript
    .split("\n")
    .filter((line) => line.startsWith("Person: "))
    .map((line) => line.slice("Person: ".length));
  const facts = said
    .map(allergenOf)
    .filter((a, i, all) => a.length > 0 && all.indexOf(a) === i)
    .map((a) => ({ key: `allergy.${a}`, text: `Allergic to ${a}.`, confidence: 0.9 }));
  const first = said[0]?.slice(0, 200) ?? "";
  return text(JSON.stringify({ episode: first ? `The patient wrote: ${first}` : null, facts }));
}

/** The next step of the script for this request. */
export function demoStep(request: ModelRequest): DemoStep {
  if (request.output?.name === "memory_extraction") return extractionAnswer(request);
  const turn = turnSoFar(request);
  if (turn.finalAnswer)
    return text("I have to stop here for this message. Please ask again, or call the clinic.");
  switch (classify(turn.input)) {
    case "hours":
      return hoursScript(turn);
    case "slots":
      return slotsScript(turn);
    case "book":
      return bookScript(turn);
    case "cancel":
      return cancelScript(turn);
    case "tell":
      return tellScript(turn);
    case "remember":
      return rememberScript(turn);
    case "record":
      return recordScript(turn);
    default:
      return text(DEMO_HELP);
  }
}
