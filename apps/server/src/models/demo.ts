import { randomUUID } from "node:crypto";
import type { ModelClient, ModelRequest, ModelStreamEvent, PriceTable, Usage } from "@alma-harness/core";
import { FakeModelClient, type ScriptedResponse, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { demoStep } from "./demo-script.js";

export const DEMO_CLIENT_ID = "demo";
export const DEMO_MODEL = "offline-demo";
export const DEMO_LABEL = "offline demo model";

/**
 * The demo's price table. The demo model costs nothing to run; it is priced like a mid-size model
 * so the spend views and the caps have something real to show. Labelled as such everywhere.
 */
export const DEMO_PRICES: PriceTable = { version: "offline-demo-1", models: { [DEMO_MODEL]: { rates: { input: 3, output: 15 } } } };

/** Deterministic token counts: about four characters a token, as a real tokenizer roughly does. */
function usageOf(request: ModelRequest, produced: string): Usage {
  const prompt = JSON.stringify(request.system).length + JSON.stringify(request.messages).length + JSON.stringify(request.tools).length;
  return { inputTokens: Math.ceil(prompt / 4), outputTokens: Math.ceil(produced.length / 4) + 1 };
}

/** One scripted response for this request, built from the demo script's next step. */
export function demoResponse(request: ModelRequest): ScriptedResponse {
  const step = demoStep(request);
  if (step.kind === "text") return scriptedText(step.text, { usage: usageOf(request, step.text) });
  const args = JSON.stringify(step.input);
  return scriptedToolCall({ id: `demo_${randomUUID().slice(0, 12)}`, name: step.name, input: step.input }, { text: step.text, usage: usageOf(request, step.text + args) });
}

/**
 * The offline demo model: the loop's scripted model (`FakeModelClient`), fed one response per call
 * by the demo script. Push and stream happen in one synchronous step, so concurrent turns never
 * take each other's response. It records every request, like the fake it wraps.
 */
export class DemoModelClient implements ModelClient {
  readonly id = DEMO_CLIENT_ID;
  readonly provider = "offline-demo";
  readonly scripted = new FakeModelClient([], { id: DEMO_CLIENT_ID });

  /** How many calls were dispatched to the demo model. */
  get calls(): number {
    return this.scripted.calls;
  }

  validate(_request: ModelRequest): void {
    // every request shape the example agent sends is supported
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    this.scripted.push(demoResponse(request));
    return this.scripted.stream(request, signal);
  }
}
