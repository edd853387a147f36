import { ALMA, GEN_AI, trailSpans } from "@alma-harness/otel";
import { context, propagation } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostPerTest, turn } from "./helpers.js";

const startHost = hostPerTest();
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  context.disable();
  propagation.disable();
});

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

describe("the host with tracing: a turn's spans join the caller's trace", () => {
  it("a turn posted with a traceparent is one invoke_agent span in that trace, its calls under it", async () => {
    exporter.reset();
    const t = await startHost({
      tracing: { spans: trailSpans({ tracer: provider.getTracer("alma") }) },
    });
    const res = await turn(t, await t.token(), "s1", "k1", "When are you open on Monday?", {
      traceparent: `00-${TRACE}-${CALLER_SPAN}-01`,
    });
    expect(res.status).toBe(200);
    const spans = exporter.getFinishedSpans();
    const agent = spans.find((s) => s.name === "invoke_agent")!;
    expect(agent.spanContext().traceId).toBe(TRACE);
    expect(agent.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(agent.attributes).toMatchObject({
      [ALMA.tenant]: "sunrise-clinic",
      [ALMA.outcome]: "completed",
      [ALMA.terminalReason]: "answered",
    });
    expect(Number(agent.attributes[ALMA.costMicros])).toBeGreaterThan(0);
    const chats = spans.filter((s) => s.attributes[GEN_AI.operation] === "chat");
    expect(chats.length).toBe(2);
    for (const chat of chats) {
      expect(chat.parentSpanContext?.spanId).toBe(agent.spanContext().spanId);
      expect(Number(chat.attributes[GEN_AI.inputTokens])).toBeGreaterThan(0);
    }
    const tool = spans.find((s) => s.name === "execute_tool opening_hours")!;
    expect(tool.spanContext().traceId).toBe(TRACE);
    expect(tool.attributes[ALMA.permissionDecision]).toBe("allow");
    // Content-free: neither the question nor the patient's id is on any span.
    const dump = JSON.stringify(spans.map((s) => s.attributes));
    expect(dump).not.toContain("Monday");
    expect(dump).not.toContain("p-1001");
  });

  it("a parked turn's span ends awaiting_approval with the ask on its tool span", async () => {
    exporter.reset();
    const t = await startHost({
      tracing: { spans: trailSpans({ tracer: provider.getTracer("alma") }) },
    });
    const res = await turn(t, await t.token(), "s1", "b1", "Please book an appointment");
    expect(res.status).toBe(202);
    const spans = exporter.getFinishedSpans();
    expect(spans.find((s) => s.name === "invoke_agent")?.attributes[ALMA.outcome]).toBe(
      "awaiting_approval",
    );
    expect(spans.find((s) => s.name === "execute_tool book_appointment")?.attributes).toMatchObject(
      {
        [ALMA.permissionDecision]: "ask",
        [ALMA.toolResult]: "parked",
      },
    );
  });
});
