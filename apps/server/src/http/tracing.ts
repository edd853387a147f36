import { type TrailSpans, traceContextOf } from "@alma-harness/otel";
import { context } from "@opentelemetry/api";
import type { Handle } from "./app.js";

/**
 * OpenTelemetry for the host (issue 27 §2): the runtime hands every accepted trail record to
 * `spans.observe`, and each request runs in the context its `traceparent` carries, so a turn's
 * spans (started when its first trail record is appended, inside the request) join the caller's
 * trace. The host brings the SDK: a tracer provider, a context manager, a propagator.
 */
export interface HostTracing {
  readonly spans: TrailSpans;
}

/** The handle, each request run inside the trace context its headers carry. */
export function tracedHandle(handle: Handle): Handle {
  return (request, connection) =>
    context.with(traceContextOf(request.headers), () => handle(request, connection));
}
