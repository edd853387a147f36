import { randomUUID } from "node:crypto";
import {
  MODEL_SPECIFICATION_VERSION,
  type ModelClient,
  type ModelRequest,
  type ModelStreamEvent,
  type PriceTable,
  ProviderError,
  type StreamToolCall,
  type Usage,
} from "@alma-harness/core";
import { demoStep } from "./demo-script.js";
import { demoStructured } from "./demo-triage.js";

export const DEMO_CLIENT_ID = "demo";
export const DEMO_MODEL = "offline-demo";
export const DEMO_LABEL = "offline demo model";

/**
 * The demo's price table. The demo model costs nothing to run; it is priced like a mid-size model
 * so the spend views and the caps have something real to show. Labelled as such everywhere.
 */
export const DEMO_PRICES: PriceTable = {
  version: "offline-demo-2",
  // The batch tier at half the standard rates, as the providers' Batch APIs price it (the nightly routine's jobs).
  models: {
    [DEMO_MODEL]: {
      rates: { input: 3, output: 15 },
      tiers: { batch: { input: 1.5, output: 7.5 } },
    },
  },
};

/** Deterministic token counts: about four characters a token, as a real tokenizer roughly does. */
export function usageOf(request: ModelRequest, produced: string): Usage {
  const prompt =
    JSON.stringify(request.system).length +
    JSON.stringify(request.messages).length +
    JSON.stringify(request.tools).length;
  return { inputTokens: Math.ceil(prompt / 4), outputTokens: Math.ceil(produced.length / 4) + 1 };
}

/**
 * The events of this request's answer, from the demo script's next step: the text (when there is
 * any) as one delta, the tool call of a tool step, the usage evidence, then the terminal frame.
 */
export function demoEvents(request: ModelRequest): readonly ModelStreamEvent[] {
  // A structured request (a single call's output schema) is answered with its JSON object; the memory extraction by the script.
  const step =
    request.output && request.output.name !== "memory_extraction"
      ? { kind: "text" as const, text: demoStructured(request) }
      : demoStep(request);
  const toolCalls: readonly StreamToolCall[] =
    step.kind === "tool"
      ? [
          {
            id: `demo_${randomUUID().slice(0, 12)}`,
            name: step.name,
            arguments: JSON.stringify(step.input),
          },
        ]
      : [];
  const usage = usageOf(request, step.text + toolCalls.map((c) => c.arguments).join(""));
  return [
    ...(step.text.length > 0 ? [{ type: "text_delta", text: step.text } as const] : []),
    ...toolCalls.map((c): ModelStreamEvent => ({ type: "tool_call", ...c })),
    { type: "usage", evidence: { status: "known", usage } },
    {
      type: "response_completed",
      stopReason: step.kind === "tool" ? "tool_use" : "end_turn",
      text: step.text,
      toolCalls,
      usage,
    },
  ];
}

/**
 * The offline demo model: no network, no timers. Each call's answer is decided when the call is
 * dispatched (from that request alone), so concurrent turns never take each other's answer. A
 * stream stops at the call's abort signal, and `return()` closes it.
 */
export class DemoModelClient implements ModelClient {
  readonly specificationVersion = MODEL_SPECIFICATION_VERSION;
  readonly id = DEMO_CLIENT_ID;
  readonly provider = "offline-demo";
  #calls = 0;

  /** How many calls were dispatched to the demo model. */
  get calls(): number {
    return this.#calls;
  }

  validate(_request: ModelRequest): void {
    // every request shape the example agent sends is supported
  }

  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelStreamEvent> {
    this.#calls += 1;
    return play(demoEvents(request), signal);
  }
}

/** The events in order, each pulled only while the call is not aborted. */
async function* play(
  events: readonly ModelStreamEvent[],
  signal: AbortSignal,
): AsyncGenerator<ModelStreamEvent, void, undefined> {
  for (const event of events) {
    if (signal.aborted) throw abortError(signal);
    yield event;
  }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error
    ? signal.reason
    : new ProviderError("the call was cancelled", { kind: "cancelled", provider: "offline-demo" });
}
