export { ALMA, GEN_AI, type TurnSpanOutcome } from "./attributes.js";
export { type TrailSpans, type TrailSpansOptions, trailSpans } from "./trail-spans.js";
export { traceContextOf } from "./propagation.js";
