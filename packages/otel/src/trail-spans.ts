import type {
  AuditEvent,
  CostEvent,
  LifecycleEvent,
  PolicyEvent,
  RoutingEvent,
} from "@alma-harness/core";
import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { ALMA, GEN_AI, type TurnSpanOutcome } from "./attributes.js";

/**
 * Turns the content-free trails into OpenTelemetry spans as they are appended: a span per turn run
 * (`invoke_agent`), per model call (`chat <model>`, a child of its turn) and per tool call
 * (`execute_tool <tool>`, a child of its turn). Every attribute comes from a trail field, so a
 * span carries what a trail may carry (identifiers, kinds, counts, decisions, keyed hashes) and
 * never a prompt, an output or a tool's arguments.
 *
 * `observe` never throws: an event it cannot place (a call of a turn it never saw start) is
 * dropped. A turn's span starts in the OpenTelemetry context active when its `turn.started` (or
 * `turn.resumed`) trail is appended, so a host that runs the turn inside an incoming request's
 * extracted context (`traceparent`) puts the turn's spans in the caller's trace.
 */
export interface TrailSpans {
  observe(event: AuditEvent): void;
  /** Ends every span still open (a host shutting down), outcome `ended_unobserved`. */
  close(at: number): void;
  /** How many turn runs have a span open. */
  readonly open: number;
}

export interface TrailSpansOptions {
  readonly tracer: Tracer;
  /**
   * At most this many turn runs open at once (default 10,000): a turn whose process died never
   * records its end, so the oldest is ended `ended_unobserved` to make room.
   */
  readonly maxOpenTurns?: number;
}

interface CallSpan {
  readonly span: Span;
  costMicros: number;
}

interface TurnSpans {
  readonly span: Span;
  readonly context: Context;
  costMicros: number;
  inputTokens: number;
  outputTokens: number;
  /** Open calls by `model <callId>` or `tool <callId>`. */
  readonly calls: Map<string, CallSpan>;
}

const DEFAULT_MAX_OPEN_TURNS = 10_000;

export function trailSpans(options: TrailSpansOptions): TrailSpans {
  return new SpanBook(options.tracer, options.maxOpenTurns ?? DEFAULT_MAX_OPEN_TURNS);
}

const keyOf = (e: AuditEvent): string => `${e.sessionId} ${e.turnId}`;

/** The open spans, by turn run; each trail event moves one of them. */
class SpanBook implements TrailSpans {
  private readonly turns = new Map<string, TurnSpans>();

  constructor(
    private readonly tracer: Tracer,
    private readonly maxOpen: number,
  ) {}

  get open(): number {
    return this.turns.size;
  }

  observe(event: AuditEvent): void {
    try {
      const turn = this.turns.get(keyOf(event));
      if (event.trail === "lifecycle") this.lifecycle(event, turn);
      else if (!turn || event.callId === undefined) return;
      else if (event.trail === "routing") this.routing(event, turn);
      else if (event.trail === "cost") this.cost(event, turn);
      else if (event.trail === "policy") policy(event, turn);
    } catch {
      // Observability never fails a turn: a span this event could not touch stays as it was.
    }
  }

  close(at: number): void {
    for (const [key, turn] of [...this.turns]) this.endTurn(key, turn, at, "ended_unobserved");
  }

  private endTurn(key: string, turn: TurnSpans, at: number, outcome: TurnSpanOutcome): void {
    for (const call of turn.calls.values()) {
      call.span.setStatus({ code: SpanStatusCode.ERROR, message: `the turn ended: ${outcome}` });
      call.span.end(at);
    }
    turn.span.setAttributes({
      [ALMA.outcome]: outcome,
      [ALMA.costMicros]: turn.costMicros,
      [GEN_AI.inputTokens]: turn.inputTokens,
      [GEN_AI.outputTokens]: turn.outputTokens,
    });
    turn.span.end(at);
    this.turns.delete(key);
  }

  private startTurn(e: LifecycleEvent, run: "started" | "resumed"): void {
    const key = keyOf(e);
    const open = this.turns.get(key);
    if (open) this.endTurn(key, open, e.at, "ended_unobserved");
    if (this.turns.size >= this.maxOpen) {
      const [oldest, turn] = this.turns.entries().next().value as [string, TurnSpans];
      this.endTurn(oldest, turn, e.at, "ended_unobserved");
    }
    const parent = context.active();
    const span = this.tracer.startSpan(
      "invoke_agent",
      {
        kind: SpanKind.INTERNAL,
        startTime: e.at,
        attributes: {
          [GEN_AI.operation]: "invoke_agent",
          [GEN_AI.conversation]: e.sessionId,
          [ALMA.tenant]: e.scope.org,
          [ALMA.turnId]: e.turnId,
          [ALMA.turnRun]: run,
        },
      },
      parent,
    );
    this.turns.set(key, {
      span,
      context: trace.setSpan(parent, span),
      costMicros: 0,
      inputTokens: 0,
      outputTokens: 0,
      calls: new Map(),
    });
  }

  private child(turn: TurnSpans, id: string, name: string, at: number, attributes: Attributes) {
    const span = this.tracer.startSpan(
      name,
      { kind: SpanKind.CLIENT, startTime: at, attributes },
      turn.context,
    );
    turn.calls.set(id, { span, costMicros: 0 });
  }

  private lifecycle(e: LifecycleEvent, turn: TurnSpans | undefined): void {
    if (e.action === "turn.started" || e.action === "turn.resumed") {
      this.startTurn(e, e.action === "turn.started" ? "started" : "resumed");
      return;
    }
    if (!turn) return;
    const key = keyOf(e);
    switch (e.action) {
      case "tool.call":
        this.toolCall(e, turn);
        break;
      case "tool.result":
        endCall(turn, `tool ${e.callId}`, e.at, (span) => {
          const code = String(e.detail ?? "ok");
          span.setAttribute(ALMA.toolResult, code);
          if (code !== "ok") span.setStatus({ code: SpanStatusCode.ERROR, message: code });
        });
        break;
      case "turn.completed":
        turn.span.setAttribute(ALMA.terminalReason, String(e.detail ?? "answered"));
        this.endTurn(key, turn, e.at, "completed");
        break;
      case "turn.uncertain":
        turn.span.setAttribute(ALMA.uncertainCause, String(e.detail ?? "unknown"));
        turn.span.setStatus({ code: SpanStatusCode.ERROR, message: "reconciliation_required" });
        this.endTurn(key, turn, e.at, "reconciliation_required");
        break;
      case "turn.parked":
        // The asked calls wait for a person: their spans end here, the decision is the resumed run's.
        for (const id of [...turn.calls.keys()].filter((k) => k.startsWith("tool ")))
          endCall(turn, id, e.at, (span) => span.setAttribute(ALMA.toolResult, "parked"));
        this.endTurn(key, turn, e.at, "awaiting_approval");
        break;
    }
  }

  private toolCall(e: LifecycleEvent, turn: TurnSpans): void {
    if (e.callId === undefined) return;
    const tool = String(e.detail ?? "unregistered");
    this.child(turn, `tool ${e.callId}`, `execute_tool ${tool}`, e.at, {
      [GEN_AI.operation]: "execute_tool",
      [GEN_AI.toolName]: tool,
      [GEN_AI.toolCallId]: e.callId,
      [GEN_AI.toolType]: "function",
    });
  }

  /** The first routing record of a call opens its span; the one written after settlement ends it. */
  private routing(e: RoutingEvent, turn: TurnSpans): void {
    const id = `model ${e.callId}`;
    if (e.servedTier === undefined && e.refusal === undefined) {
      this.child(turn, id, `chat ${e.model}`, e.at, {
        [GEN_AI.operation]: "chat",
        [GEN_AI.provider]: e.clientId,
        [GEN_AI.system]: e.clientId,
        [GEN_AI.requestModel]: e.model,
        [ALMA.callKind]: e.kind,
        [ALMA.tier]: e.tier,
        [ALMA.sensitivity]: e.sensitivity,
      });
      return;
    }
    endCall(turn, id, e.at, (span) => {
      span.setAttribute(GEN_AI.responseModel, e.model);
      if (e.servedTier !== undefined) span.setAttribute(ALMA.servedTier, e.servedTier);
      if (e.refusal !== undefined) span.setAttribute(ALMA.refusal, e.refusal);
    });
  }

  /** A cost record: the settled micro-dollars and tokens add up on the call and the turn (a cap warning adds 0). */
  private cost(e: CostEvent, turn: TurnSpans): void {
    turn.costMicros += e.usdMicros;
    turn.inputTokens += e.inputTokens ?? 0;
    turn.outputTokens += e.outputTokens ?? 0;
    const id = `model ${e.callId}`;
    const call = turn.calls.get(id);
    if (!call) return;
    call.costMicros += e.usdMicros;
    call.span.setAttribute(ALMA.costMicros, call.costMicros);
    if (e.inputTokens !== undefined) call.span.setAttribute(GEN_AI.inputTokens, e.inputTokens);
    if (e.outputTokens !== undefined) call.span.setAttribute(GEN_AI.outputTokens, e.outputTokens);
    if (e.capsCrossed.length > 0) call.span.setAttribute(ALMA.capsCrossed, [...e.capsCrossed]);
    if (!e.refused) return;
    const reason = e.refused.reason;
    endCall(turn, id, e.at, (span) => {
      span.setAttribute(ALMA.costRefused, reason);
      span.setStatus({ code: SpanStatusCode.ERROR, message: `refused: ${reason}` });
    });
  }
}

/** A call's span, ended at `at` after `finish` touched it; a call never opened is nothing. */
function endCall(turn: TurnSpans, id: string, at: number, finish?: (span: Span) => void): void {
  const call = turn.calls.get(id);
  if (!call) return;
  finish?.(call.span);
  call.span.end(at);
  turn.calls.delete(id);
}

/** The permission fence's records on the tool call's span: the decision, then its resolution. */
function policy(e: PolicyEvent, turn: TurnSpans): void {
  const span = turn.calls.get(`tool ${e.callId}`)?.span;
  if (!span) return;
  if (e.action === "decision" && e.decision !== undefined) {
    span.setAttribute(ALMA.permissionDecision, e.decision);
    if (e.rule !== undefined) span.setAttribute(ALMA.permissionRule, e.rule);
    if (e.by !== undefined) span.setAttribute(ALMA.permissionBy, e.by);
  } else if (e.action === "permission.resolved" && e.decision !== undefined) {
    span.setAttribute(ALMA.permissionResolved, e.decision);
    if (e.by !== undefined) span.setAttribute(ALMA.permissionBy, e.by);
    if (e.reason !== undefined) span.setAttribute(ALMA.permissionReason, e.reason);
  } else if (e.action === "grant.used") {
    span.setAttribute(ALMA.permissionRule, "run_grant");
  }
}
