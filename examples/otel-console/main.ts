// OpenTelemetry GenAI spans from the trails, printed by the SDK's console exporter (issue 27 §2):
// `npm run example:otel-console`. The host brings the SDK (a tracer provider, a context manager,
// the W3C propagator); Alma's runtime hands every trail record it wrote to `trailSpans`, and the
// turn runs inside an incoming request's `traceparent`, so its spans join that trace.
// Offline: a scripted model plays the model's part.
import { defineTool } from "@alma-harness/core";
import { scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { traceContextOf, trailSpans } from "@alma-harness/otel";
import { memory } from "@alma-harness/runtime";
import { context, propagation } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { offlineConfig } from "../offline.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())],
});
const spans = trailSpans({ tracer: provider.getTracer("alma-example") });

const hours = defineTool({
  name: "opening_hours",
  description: "Opening hours of the clinic on a day.",
  input: { type: "object", properties: { day: { type: "string" } }, required: ["day"] },
  handler: ({ day }) => ({ day, open: "09:00-17:00" }),
});

const { runner } = memory({
  ...offlineConfig(
    "You are the front desk of a clinic.",
    [hours],
    [
      scriptedToolCall({ id: "c1", name: "opening_hours", input: { day: "monday" } }),
      scriptedText("We are open 9 to 5 on Monday."),
    ],
  ),
  onTrail: (event) => spans.observe(event),
});

// The headers of the request that asked for this turn (a host reads them off its HTTP request).
const incoming = new Headers({
  traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
});
const view = await context.with(traceContextOf(incoming), () =>
  runner.runTurn({
    scope: { org: "clinic-a", uid: "patient-42" },
    sessionId: "otel-example",
    idempotencyKey: "msg-1",
    input: "When are you open on Monday?",
    intent: { tier: "balanced", sensitivity: "internal" },
  }),
);
await provider.forceFlush();
await provider.shutdown();
console.log(`turn ${view.status}; spans printed above, in trace 4bf92f3577b34da6a3ce929d0e0e4736`);
