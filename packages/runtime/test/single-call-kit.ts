import type { ConversationStores } from "@alma-harness/conversation";
import {
  type BudgetCapsInput,
  type JsonSchema,
  type ModelClient,
  type Scope,
  sessionPseudonym,
} from "@alma-harness/core";
import {
  createGovernedStepRunner,
  type GovernedStepRunner,
  type StepRequest,
} from "@alma-harness/single-call";

/** The test deployment's trail key (fixed, so pseudonyms are predictable). */
export const STEP_TRAIL_KEY = "single-call-test-trail-key-of-32-bytes-or-more";

/** The triage schema the tests ask for: a closed object with an enum and a bounded number. */
export const TRIAGE_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    category: { type: "string", enum: ["booking", "clinical", "billing", "other"] },
    urgency: { type: "integer", minimum: 1, maximum: 5 },
  },
  required: ["category", "urgency"],
  additionalProperties: false,
};

export const PRICES = {
  version: "p1",
  models: { demo: { rates: { input: 3, output: 15 } } },
} as const;

/** A step runner on a store set, around one client routed at model `demo` (512 output tokens, no cache). */
export function stepRunner(
  stores: ConversationStores,
  client: ModelClient,
  over: { readonly caps?: BudgetCapsInput; readonly configRevision?: string } = {},
): GovernedStepRunner {
  return createGovernedStepRunner({
    stores,
    clients: [client],
    policy: {
      resolve: () => ({ clientId: client.id, model: "demo", maxOutputTokens: 512, cache: false }),
    },
    prices: PRICES,
    ...(over.caps ? { caps: over.caps } : {}),
    policyVersion: "policy-1",
    configRevision: over.configRevision ?? "rev-1",
    trailKey: STEP_TRAIL_KEY,
    resultRetentionMs: 86_400_000,
  });
}

/** A triage request of `scope` under `key` (the prompt may vary, to make a conflict). */
export function triage(scope: Scope, key: string, over: Partial<StepRequest> = {}): StepRequest {
  return {
    scope,
    idempotencyKey: key,
    intent: { tier: "fast", sensitivity: "confidential", task: "triage" },
    sessionId: "s1",
    prompt: "Classify: I need to move my appointment to Friday.",
    output: { name: "triage", schema: TRIAGE_SCHEMA },
    ...over,
  };
}

export function pseudonym(scope: Scope, sessionId = "s1") {
  return sessionPseudonym(STEP_TRAIL_KEY, scope, sessionId);
}
