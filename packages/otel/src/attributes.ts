/**
 * The span attribute names this package writes: the OpenTelemetry GenAI semantic conventions'
 * `gen_ai.*` where one exists, `alma.*` for what only a governed turn has. One table, so a backend's
 * dashboards have one place to read them from.
 */
export const GEN_AI = {
  operation: "gen_ai.operation.name",
  /** The current name of the provider attribute (semantic conventions 1.37 and later). */
  provider: "gen_ai.provider.name",
  /** Its name before 1.37, still what many backends read: both carry the same value. */
  system: "gen_ai.system",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  conversation: "gen_ai.conversation.id",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
} as const;

export const ALMA = {
  tenant: "alma.tenant",
  turnId: "alma.turn.id",
  /** `started` or `resumed`: a parked turn's run after its decision is a span of its own. */
  turnRun: "alma.turn.run",
  outcome: "alma.turn.outcome",
  terminalReason: "alma.turn.terminal_reason",
  uncertainCause: "alma.turn.uncertain_cause",
  costMicros: "alma.cost.usd_micros",
  capsCrossed: "alma.cost.caps_crossed",
  costRefused: "alma.cost.refused",
  callKind: "alma.call.kind",
  tier: "alma.routing.tier",
  sensitivity: "alma.routing.sensitivity",
  servedTier: "alma.routing.served_tier",
  refusal: "alma.call.refusal",
  step: "alma.step",
  permissionDecision: "alma.permission.decision",
  permissionRule: "alma.permission.rule",
  permissionBy: "alma.permission.by",
  permissionResolved: "alma.permission.resolved",
  permissionReason: "alma.permission.reason",
  toolResult: "alma.tool.result",
} as const;

/**
 * How a turn's span ended (`alma.turn.outcome`): a closed vocabulary, the engine's views a trail
 * can show. `ended_unobserved` is a span this package closed itself (see `TrailSpans.close`).
 */
export type TurnSpanOutcome =
  | "completed"
  | "reconciliation_required"
  | "awaiting_approval"
  | "ended_unobserved";
