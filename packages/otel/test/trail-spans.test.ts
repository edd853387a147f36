import type { AuditEvent } from "@alma-harness/core";
import { ALMA, GEN_AI, trailSpans } from "@alma-harness/otel";
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AT, events, modelCall, w2 } from "./trail-fixture.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer("alma-test");
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  context.disable();
  propagation.disable();
});
beforeEach(() => exporter.reset());

function feed(list: readonly AuditEvent[], spans = trailSpans({ tracer })) {
  for (const e of list) spans.observe(e);
  return spans;
}

const byName = (name: string): ReadableSpan[] =>
  exporter.getFinishedSpans().filter((s) => s.name === name);
const one = (name: string): ReadableSpan => {
  const found = byName(name);
  expect(found).toHaveLength(1);
  return found[0]!;
};
const ms = (t: [number, number]) => t[0] * 1000 + t[1] / 1e6;

describe("trailSpans: a span per turn, per model call and per tool call", () => {
  it("a W2 turn is one invoke_agent span with two chat spans and one execute_tool span under it", () => {
    const spans = feed(w2());
    expect(spans.open).toBe(0);
    const turn = one("invoke_agent");
    const chats = byName("chat claude-sonnet-4-5");
    const tool = one("execute_tool book");
    expect(chats).toHaveLength(2);
    for (const child of [...chats, tool]) {
      expect(child.parentSpanContext?.spanId).toBe(turn.spanContext().spanId);
      expect(child.spanContext().traceId).toBe(turn.spanContext().traceId);
      expect(child.kind).toBe(SpanKind.CLIENT);
    }
    expect(ms(turn.startTime)).toBe(AT);
    expect(ms(turn.endTime)).toBe(AT + 130);
    expect(ms(tool.startTime)).toBe(AT + 60);
    expect(ms(tool.endTime)).toBe(AT + 70);
  });

  it("GenAI attributes: operation, provider (both names), model, tokens, conversation", () => {
    feed(w2());
    const chat = byName("chat claude-sonnet-4-5")[0]!;
    expect(chat.attributes).toMatchObject({
      [GEN_AI.operation]: "chat",
      [GEN_AI.provider]: "anthropic",
      [GEN_AI.system]: "anthropic",
      [GEN_AI.requestModel]: "claude-sonnet-4-5",
      [GEN_AI.responseModel]: "claude-sonnet-4-5",
      [GEN_AI.inputTokens]: 1200,
      [GEN_AI.outputTokens]: 35,
      [ALMA.costMicros]: 105,
      [ALMA.callKind]: "main",
      [ALMA.servedTier]: "standard",
    });
    expect(one("execute_tool book").attributes).toMatchObject({
      [GEN_AI.operation]: "execute_tool",
      [GEN_AI.toolName]: "book",
      [GEN_AI.toolCallId]: "c1",
      [ALMA.permissionDecision]: "allow",
      [ALMA.permissionRule]: "controller",
      [ALMA.permissionBy]: "operator",
      [ALMA.toolResult]: "ok",
    });
    expect(one("invoke_agent").attributes).toMatchObject({
      [GEN_AI.operation]: "invoke_agent",
      [GEN_AI.conversation]: "sp_54ae3a302cea2457428bea8fefc6c41b",
      [ALMA.tenant]: "clinic-a",
      [ALMA.turnId]: "turn-1",
      [ALMA.outcome]: "completed",
      [ALMA.terminalReason]: "answered",
      [ALMA.costMicros]: 210,
      [GEN_AI.inputTokens]: 2400,
      [GEN_AI.outputTokens]: 70,
    });
  });

  it("no span carries text: every attribute value is a trail value, a number or a closed word", () => {
    feed(w2());
    const values = exporter.getFinishedSpans().flatMap((s) => Object.values(s.attributes));
    for (const value of values.flat()) {
      if (typeof value === "string") expect(value).toMatch(/^[A-Za-z0-9_.:\- ]{1,200}$/);
      else expect(["number", "boolean"]).toContain(typeof value);
    }
    // The person's uid is a trail field, never a span attribute.
    expect(JSON.stringify(values)).not.toContain("patient-42");
  });

  it("an uncertain turn carries its cause and an error status; open calls end with it", () => {
    feed([
      ...events("turn-2", [{ trail: "lifecycle", at: AT, action: "turn.started" }]),
      ...modelCall("turn-2", 1, AT + 1).slice(0, 2),
      ...events("turn-2", [
        { trail: "lifecycle", at: AT + 9, action: "turn.uncertain", detail: "stream_torn" },
      ]),
    ]);
    const turn = one("invoke_agent");
    expect(turn.attributes[ALMA.outcome]).toBe("reconciliation_required");
    expect(turn.attributes[ALMA.uncertainCause]).toBe("stream_torn");
    expect(turn.status.code).toBe(SpanStatusCode.ERROR);
    const chat = one("chat claude-sonnet-4-5");
    expect(chat.status.code).toBe(SpanStatusCode.ERROR);
    expect(ms(chat.endTime)).toBe(AT + 9);
  });

  it("a refused call (cap) ends its span with the reason, at zero cost", () => {
    const [route] = modelCall("turn-3", 1, AT + 1);
    feed([
      ...events("turn-3", [{ trail: "lifecycle", at: AT, action: "turn.started" }]),
      route!,
      ...events("turn-3", [
        {
          trail: "cost",
          callId: "turn-3:main:1",
          at: AT + 2,
          operationId: "turn-3:main:1",
          model: "claude-sonnet-4-5",
          usdMicros: 0,
          settlementId: "none",
          capsCrossed: [],
          refused: { reason: "cap", detail: "per_turn" },
        },
        { trail: "lifecycle", at: AT + 3, action: "turn.completed", detail: "budget" },
      ]),
    ]);
    const chat = one("chat claude-sonnet-4-5");
    expect(chat.attributes[ALMA.costRefused]).toBe("cap");
    expect(chat.attributes[ALMA.costMicros]).toBe(0);
    expect(chat.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("a parked turn ends awaiting_approval with the ask on the tool span; its resumed run is a new span", () => {
    const spans = feed([
      ...events("turn-4", [{ trail: "lifecycle", at: AT, action: "turn.started" }]),
      ...events("turn-4", [
        { trail: "lifecycle", callId: "c9", at: AT + 5, action: "tool.call", detail: "book" },
        {
          trail: "policy",
          callId: "c9",
          at: AT + 6,
          tool: "book",
          action: "decision",
          decision: "ask",
          rule: "controller",
          by: "operator",
        },
        { trail: "policy", callId: "c9", at: AT + 6, tool: "book", action: "permission.requested" },
        { trail: "lifecycle", at: AT + 7, action: "turn.parked", detail: "asks:1" },
      ]),
    ]);
    expect(spans.open).toBe(0);
    expect(one("invoke_agent").attributes[ALMA.outcome]).toBe("awaiting_approval");
    expect(one("execute_tool book").attributes).toMatchObject({
      [ALMA.permissionDecision]: "ask",
      [ALMA.toolResult]: "parked",
    });
    exporter.reset();
    feed(
      events("turn-4", [
        { trail: "lifecycle", at: AT + 100, action: "turn.resumed" },
        { trail: "lifecycle", callId: "c9", at: AT + 101, action: "tool.call", detail: "book" },
        {
          trail: "policy",
          callId: "c9",
          at: AT + 101,
          tool: "book",
          action: "permission.resolved",
          decision: "deny",
          by: "operator",
          reason: "operator_denied",
        },
        {
          trail: "lifecycle",
          callId: "c9",
          at: AT + 102,
          action: "tool.result",
          detail: "TOOL_DENIED",
        },
        { trail: "lifecycle", at: AT + 110, action: "turn.completed", detail: "answered" },
      ]),
      spans,
    );
    expect(one("invoke_agent").attributes[ALMA.turnRun]).toBe("resumed");
    const tool = one("execute_tool book");
    expect(tool.attributes).toMatchObject({
      [ALMA.permissionResolved]: "deny",
      [ALMA.permissionReason]: "operator_denied",
      [ALMA.toolResult]: "TOOL_DENIED",
    });
    expect(tool.status).toEqual({ code: SpanStatusCode.ERROR, message: "TOOL_DENIED" });
  });
});

describe("trailSpans: what it never does", () => {
  it("events of a turn it never saw start are dropped; observe never throws", () => {
    const spans = trailSpans({ tracer });
    for (const e of w2("turn-9").slice(1)) expect(() => spans.observe(e)).not.toThrow();
    expect(() => spans.observe(null as unknown as AuditEvent)).not.toThrow();
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(spans.open).toBe(0);
  });

  it("at most maxOpenTurns runs stay open; the oldest ends ended_unobserved; close ends the rest", () => {
    const spans = trailSpans({ tracer, maxOpenTurns: 2 });
    for (const id of ["a", "b", "c"])
      feed(events(id, [{ trail: "lifecycle", at: AT, action: "turn.started" }]), spans);
    expect(spans.open).toBe(2);
    expect(one("invoke_agent").attributes).toMatchObject({
      [ALMA.turnId]: "a",
      [ALMA.outcome]: "ended_unobserved",
    });
    spans.close(AT + 1);
    expect(spans.open).toBe(0);
    expect(byName("invoke_agent")).toHaveLength(3);
  });
});

describe("trace context", () => {
  it("a turn started inside an incoming request's traceparent joins that trace", async () => {
    const { traceContextOf } = await import("@alma-harness/otel");
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const headers = new Headers({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    const spans = trailSpans({ tracer });
    await context.with(traceContextOf(headers), async () => {
      await Promise.resolve();
      feed(w2("turn-t"), spans);
    });
    const turn = one("invoke_agent");
    expect(turn.spanContext().traceId).toBe(traceId);
    expect(turn.parentSpanContext?.spanId).toBe("00f067aa0ba902b7");
    for (const s of exporter.getFinishedSpans()) expect(s.spanContext().traceId).toBe(traceId);
    // Outside any request, a turn starts a trace of its own.
    exporter.reset();
    context.with(ROOT_CONTEXT, () => feed(w2("turn-u"), spans));
    expect(one("invoke_agent").spanContext().traceId).not.toBe(traceId);
    expect(trace.getSpan(context.active())).toBeUndefined();
  });
});
