import type { ModelStreamEvent, Usage } from "@alma-harness/core";
import { type ScriptedResponse, scriptedEvents } from "@alma-harness/loop/testing";

export const SECRET_QUERY = "symptoms of rare-condition-xyz for patient 4411";

/** A provider-executed web search (call, result with `count` results) then a text answer. */
export function scriptedSearch(
  text: string,
  opts: { id?: string; count?: number; usage?: Usage; stopReason?: string } = {},
): ScriptedResponse {
  const id = opts.id ?? "srv_1";
  const usage: Usage = opts.usage ?? { inputTokens: 10, outputTokens: 5, webSearchRequests: 1 };
  const events: ModelStreamEvent[] = [
    {
      type: "provider_tool_call",
      provider: "fake",
      id,
      name: "web_search",
      payload: { query: SECRET_QUERY },
    },
    {
      type: "provider_tool_result",
      provider: "fake",
      callId: id,
      name: "web_search",
      resultCount: opts.count ?? 3,
      payload: [{ url: "https://example.org/a" }],
    },
    { type: "text_delta", text },
    { type: "usage", evidence: { status: "known", usage } },
    {
      type: "response_completed",
      stopReason: opts.stopReason ?? "end_turn",
      text,
      toolCalls: [],
      usage,
    },
  ];
  return scriptedEvents(events);
}
