import {
  defineProviderTool,
  defineTool,
  type ModelStreamEvent,
  type Usage,
} from "@alma-harness/core";
import { scriptedEvents, scriptedText, scriptedToolCall } from "@alma-harness/loop/testing";
import { CANARIES, canariesIn, canaryLookupTool as lookup } from "@alma-harness/testing";
import { describe, expect, it } from "vitest";
import { completed, harness, hashed, pseudonym } from "./harness.js";

const archive = defineTool({
  name: "archive_notes",
  description: "Archives a patient's notes.",
  input: { type: "object" },
  deferred: true,
  handler: () => "archived",
});

/** A provider web search for the canary query, then a pause for the next step. */
function canarySearch(): ReturnType<typeof scriptedEvents> {
  const usage: Usage = { inputTokens: 10, outputTokens: 5, webSearchRequests: 1 };
  const events: ModelStreamEvent[] = [
    {
      type: "provider_tool_call",
      provider: "fake",
      id: "srv_1",
      name: "web_search",
      payload: { query: CANARIES.searchQuery },
    },
    {
      type: "provider_tool_result",
      provider: "fake",
      callId: "srv_1",
      name: "web_search",
      resultCount: 2,
      payload: [{ url: CANARIES.mediaUri }],
    },
    { type: "text_delta", text: `Searching for ${CANARIES.patientName}` },
    { type: "usage", evidence: { status: "known", usage } },
    {
      type: "response_completed",
      stopReason: "pause_turn",
      text: `Searching for ${CANARIES.patientName}`,
      toolCalls: [],
      usage,
    },
  ];
  return scriptedEvents(events);
}

describe("content-free trails through the public engine (canaries)", () => {
  it("a patient name, a phone number as session id, an API key, a search query, a media URI and an invented tool name reach no trail record", async () => {
    const h = harness({
      tools: [lookup, archive],
      providerTools: [defineProviderTool({ kind: "web_search" })],
      // The ask path too: the request and the resolution carry the subject only hashed.
      permissions: { decide: () => "ask", resolve: () => true },
      script: [
        canarySearch(),
        scriptedToolCall([
          {
            id: "c1",
            name: "lookup_patient",
            input: { name: CANARIES.patientName, apiKey: CANARIES.apiKey },
          },
          { id: "c2", name: CANARIES.inventedTool, input: { patient: CANARIES.patientName } },
          { id: "c3", name: "search_tools", input: { query: `${CANARIES.searchQuery} archive` } },
        ]),
        scriptedText(`Done for ${CANARIES.patientName}.`),
      ],
    });
    const outcome = await h.run({
      sessionId: CANARIES.phoneSessionId,
      input: [
        {
          type: "text",
          text: `I am ${CANARIES.patientName}, my key is ${CANARIES.apiKey}; search ${CANARIES.searchQuery}`,
        },
        {
          type: "media",
          kind: "image",
          ref: CANARIES.mediaUri,
          contentType: "image/png",
          sizeBytes: 2048,
        },
      ],
    });
    completed(outcome);
    // The canaries did reach the session (content), so the scan below is not vacuous.
    expect(
      canariesIn(JSON.stringify(outcome.status === "completed" ? outcome.messages : [])),
    ).not.toEqual([]);
    const records = h.audit.events;
    expect(records.length).toBeGreaterThan(15);
    expect(canariesIn(JSON.stringify(records))).toEqual([]);
    for (const record of records) expect(canariesIn(JSON.stringify(record))).toEqual([]);
    // What the trails hold instead: the pseudonym, the hash, the registered name or `unregistered`.
    expect(records.every((e) => e.sessionId === pseudonym(CANARIES.phoneSessionId))).toBe(true);
    expect(
      h
        .trail("policy")
        .filter((e) => e.callId === "c1")
        .map((e) => e.authorization),
    ).toContainEqual({ action: "read", subject: hashed(`patient:${CANARIES.patientName}`) });
    expect(h.trail("policy").map((e) => e.action)).toEqual(
      expect.arrayContaining(["intent", "decision", "permission.requested", "permission.resolved"]),
    );
    expect(h.trail("access").map((e) => [e.tool, e.resource])).toEqual(
      expect.arrayContaining([
        ["web_search", "provider:fake:results:2"],
        ["media", "provider:fake:image:bytes:2048"],
        ["lookup_patient", hashed(`patients/${CANARIES.patientName}`)],
      ]),
    );
    const calls = h.trail("lifecycle").filter((e) => e.action === "tool.call");
    expect(calls.map((e) => [e.callId, e.detail])).toEqual([
      ["c1", "lookup_patient"],
      ["c2", "unregistered"],
      ["c3", "search_tools"],
    ]);
  });

  it("an unregistered tool name is `unregistered` on the lifecycle trail, even when it is an otherwise valid name", async () => {
    const h = harness({
      tools: [lookup],
      script: [
        scriptedToolCall({ id: "c1", name: "delete_all_patients", input: {} }),
        scriptedText("ok"),
      ],
    });
    completed(await h.run());
    expect(
      h
        .trail("lifecycle")
        .filter((e) => e.callId === "c1")
        .map((e) => [e.action, e.detail]),
    ).toEqual([
      ["tool.call", "unregistered"],
      ["tool.result", "TOOL_NOT_FOUND"],
    ]);
    expect(JSON.stringify(h.audit.events)).not.toContain("delete_all_patients");
  });

  it("the same session id in two tenants has two pseudonyms, and the engine's key decides them", async () => {
    const a = harness({ script: [scriptedText("a")] });
    const b = harness({ script: [scriptedText("b")] });
    completed(await a.run({ sessionId: CANARIES.phoneSessionId }));
    completed(
      await b.run({
        sessionId: CANARIES.phoneSessionId,
        scope: { org: "clinic-b", uid: "patient-1" },
      }),
    );
    const [ofA] = new Set(a.audit.events.map((e) => e.sessionId));
    const [ofB] = new Set(b.audit.events.map((e) => e.sessionId));
    expect(ofA).toBe(pseudonym(CANARIES.phoneSessionId));
    expect(ofB).toBe(pseudonym(CANARIES.phoneSessionId, { org: "clinic-b", uid: "patient-1" }));
    expect(ofA).not.toBe(ofB);
  });
});
