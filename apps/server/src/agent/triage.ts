import { createHash } from "node:crypto";
import type { Block, JsonSchema, RoutingIntent, Scope } from "@alma-harness/core";
import type { GovernedStepRunner, StepRequest } from "@alma-harness/single-call";

/**
 * The example host's triage classifier (issue 17 §1): each incoming patient message is classified
 * by one governed single call (`rt.steps`) before its turn runs, so the clinic's team can sort
 * the desk by category and urgency. It appends nothing to the session, recalls nothing, and its
 * key is the message's own delivery key: a redelivered message replays its triage, never pays twice.
 */

export const TRIAGE_CATEGORIES = [
  "booking",
  "information",
  "records",
  "clinical",
  "other",
] as const;
export type TriageCategory = (typeof TRIAGE_CATEGORIES)[number];

export interface Triage {
  readonly category: TriageCategory;
  /** 1 (routine) to 5 (urgent: the team should look now). */
  readonly urgency: number;
}

/** What the model must answer: a closed object, so the project's validator checks every field. */
export const TRIAGE_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    category: { type: "string", enum: [...TRIAGE_CATEGORIES] },
    urgency: { type: "integer", minimum: 1, maximum: 5 },
  },
  required: ["category", "urgency"],
  additionalProperties: false,
};

/** Patient text is personal data: confidential, routed on the fast tier. */
export const TRIAGE_INTENT: RoutingIntent = Object.freeze({
  tier: "fast",
  sensitivity: "confidential",
  task: "triage",
});

export const TRIAGE_SYSTEM = `You sort the messages patients send to a medical clinic's front desk.
Answer only with the JSON object the schema asks for: the message's category (booking: appointments;
information: hours and practical questions; records: the patient's own record; clinical: symptoms or
treatment; other) and its urgency from 1 (routine) to 5 (the clinic team should look now).`;

/** The person's own text of an incoming message (a string, or a user message's text blocks); empty when none. */
export function messageText(input: unknown): string {
  if (typeof input === "string") return input;
  const blocks = (input as { blocks?: readonly Block[] } | null)?.blocks;
  if (!Array.isArray(blocks)) return "";
  return blocks
    .filter((b) => b?.type === "text" && b.origin === undefined)
    .map((b) => (b as { text: string }).text)
    .join("\n");
}

/** The triage call of one delivery: its key derives from the session and the delivery key (a turn's own). */
export function triageRequest(
  scope: Scope,
  sessionId: string,
  deliveryKey: string,
  text: string,
): StepRequest {
  const key = `triage_${createHash("sha256").update(`${sessionId}\n${deliveryKey}`).digest("hex").slice(0, 40)}`;
  return {
    scope,
    idempotencyKey: key,
    sessionId,
    intent: TRIAGE_INTENT,
    system: TRIAGE_SYSTEM,
    prompt: text,
    output: { name: "triage", schema: TRIAGE_SCHEMA },
    temperature: 0,
  };
}

/**
 * Classifies an incoming message; `undefined` when there is no text, or the call gave no valid
 * answer (invalid, refused, uncertain, in progress elsewhere). Triage informs the team; it never
 * holds the patient's turn back, and its failure is the host's to show, not the turn's.
 */
export async function triageIncoming(
  steps: GovernedStepRunner,
  scope: Scope,
  sessionId: string,
  deliveryKey: string,
  input: unknown,
): Promise<Triage | undefined> {
  const text = messageText(input).trim();
  if (text.length === 0) return undefined;
  try {
    const result = await steps.run(
      triageRequest(scope, sessionId, deliveryKey, text.slice(0, 4000)),
    );
    return result.status === "completed" ? (result.object as unknown as Triage) : undefined;
  } catch {
    return undefined;
  }
}
