import { defineTool } from "@alma-harness/core";
/**
 * Canary values for the trail tests (issue 14): what a careful auditor feeds a deployment to see
 * where content ends up. Each is distinctive enough that a hit is never a coincidence, and each
 * has fragments a partial leak would still show (a name's surname, a phone number's digits).
 */
export const CANARIES = {
  patientName: "Zelda Quixote-Marlowe",
  /** A phone number used as a session id (printable, no spaces: a valid id). */
  phoneSessionId: "+5511987654321",
  apiKey: "sk-live-7Hq2CanaryKey9xY4pL0",
  searchQuery: "zelda quixote hiv test results",
  mediaUri: "https://media.clinic.example/zq/scan-20261101.png",
  /** A tool name a model invented: not registered anywhere. */
  inventedTool: "exfiltrate_zelda_records",
} as const;

/** Every string whose presence means a canary leaked: the canaries and their telltale fragments. */
export const CANARY_FRAGMENTS: readonly string[] = [
  ...Object.values(CANARIES),
  "Zelda",
  "Quixote",
  "Marlowe",
  "987654321",
  "7Hq2CanaryKey",
  "hiv test",
  "scan-20261101",
  "media.clinic.example",
  "exfiltrate",
];

/** The canary fragments found in `text` (case-insensitive): empty when nothing leaked. */
export function canariesIn(text: string): string[] {
  const lower = text.toLowerCase();
  return CANARY_FRAGMENTS.filter((fragment) => lower.includes(fragment.toLowerCase()));
}

/** A tool whose authorization subject and access resource are derived from what the model wrote (a patient's name). */
export const canaryLookupTool = defineTool({
  name: "lookup_patient",
  description: "Looks a patient up by name.",
  input: { type: "object", properties: { name: { type: "string" }, apiKey: { type: "string" } } },
  authorize: (input) => ({ action: "read", subject: `patient:${String(input.name)}` }),
  access: (input) => ({ resource: `patients/${String(input.name)}` }),
  handler: (input) => ({ found: String(input.name) }),
});
