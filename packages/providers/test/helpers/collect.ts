import type {
  Block,
  JsonObject,
  ModelClient,
  ModelRequest,
  ModelStreamEvent,
  Msg,
  ProviderError,
} from "@alma-harness/core";

export async function collect(
  client: ModelClient,
  request: ModelRequest,
  signal = new AbortController().signal,
): Promise<ModelStreamEvent[]> {
  const events: ModelStreamEvent[] = [];
  for await (const event of client.stream(request, signal)) events.push(event);
  return events;
}

/** Collects until the stream throws; returns the events before and the error. */
export async function collectError(
  client: ModelClient,
  request: ModelRequest,
): Promise<{ events: ModelStreamEvent[]; error: ProviderError }> {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const event of client.stream(request, new AbortController().signal))
      events.push(event);
  } catch (error) {
    return { events, error: error as ProviderError };
  }
  throw new Error(`expected the stream to throw; it ended with ${JSON.stringify(events.at(-1))}`);
}

export function terminal(events: readonly ModelStreamEvent[]) {
  const last = events.at(-1);
  if (last?.type !== "response_completed")
    throw new Error(`no terminal frame: ${JSON.stringify(last)}`);
  return last;
}

export function textOfEvents(events: readonly ModelStreamEvent[]): string {
  return events.map((e) => (e.type === "text_delta" ? e.text : "")).join("");
}

export function usageEvidence(events: readonly ModelStreamEvent[]) {
  const usage = events.filter((e) => e.type === "usage");
  if (usage.length !== 1) throw new Error(`expected one usage event, got ${usage.length}`);
  return (usage[0] as Extract<ModelStreamEvent, { type: "usage" }>).evidence;
}

/**
 * What a loop would persist from a stream, in arrival order: text runs, reasoning blocks closed by
 * a signature or redacted data and stamped with their provenance (as the governed call stamps
 * them), complete tool calls (input parsed), provider tool blocks.
 */
export function assistantMessage(
  events: readonly ModelStreamEvent[],
  provider: string,
  model: string,
): Msg {
  const blocks: Block[] = [];
  let text = "";
  let reasoning = "";
  const flushText = () => {
    if (text) blocks.push({ type: "text", text });
    text = "";
  };
  for (const e of events) {
    if (e.type === "text_delta") text += e.text;
    else if (e.type === "reasoning_delta") {
      flushText();
      reasoning += e.text;
      if (e.signature || e.redacted) {
        blocks.push({
          type: "reasoning",
          text: reasoning,
          provider,
          model,
          ...(e.signature ? { signature: e.signature } : {}),
          ...(e.redacted ? { redacted: e.redacted } : {}),
        });
        reasoning = "";
      }
    } else if (e.type === "tool_call") {
      flushText();
      blocks.push({
        type: "tool_call",
        id: e.id,
        name: e.name,
        input: JSON.parse(e.arguments) as JsonObject,
      });
    } else if (e.type === "provider_tool_call") {
      flushText();
      blocks.push({
        type: "provider_tool_call",
        provider: e.provider,
        id: e.id,
        name: e.name,
        payload: e.payload,
      });
    } else if (e.type === "provider_tool_result") {
      flushText();
      blocks.push({
        type: "provider_tool_result",
        provider: e.provider,
        callId: e.callId,
        name: e.name,
        resultCount: e.resultCount,
        payload: e.payload,
      });
    }
  }
  flushText();
  return { role: "assistant", blocks };
}

export function userText(text: string): Msg {
  return { role: "user", blocks: [{ type: "text", text }] };
}

export function baseRequest(model: string, overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    model,
    system: [],
    messages: [userText("Hello")],
    tools: [],
    maxOutputTokens: 1024,
    ...overrides,
  };
}
