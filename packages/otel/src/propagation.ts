import { type Context, context, propagation } from "@opentelemetry/api";

/**
 * The context an incoming HTTP request carries (`traceparent`, `tracestate`), extracted by the
 * propagator the host registered with the SDK (W3C trace context by default there). A host runs
 * the turn inside it (`context.with(traceContextOf(request.headers), …)`) and the turn's spans join
 * the caller's trace. Without a registered propagator it is the active context unchanged.
 */
export function traceContextOf(headers: Headers): Context {
  return propagation.extract(context.active(), headers, {
    keys: (carrier) => [...carrier.keys()],
    get: (carrier, key) => carrier.get(key) ?? undefined,
  });
}
